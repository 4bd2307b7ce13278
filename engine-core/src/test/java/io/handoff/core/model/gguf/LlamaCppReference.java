package io.handoff.core.model.gguf;

import io.handoff.core.json.Json;
import io.handoff.core.model.tokenizer.NodeReference;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * llama.cpp itself, as node-llama-cpp (pinned in {@code testkit-node/package.json}) bundles its prebuilt CPU
 * binary, run on a GGUF file through the scripts in {@code testkit-node/}: its tokenizer and its greedy generation.
 * The packages come from {@link NodeReference#nodeModules}: {@code HANDOFF_NODE_MODULES} under CI, where their
 * absence fails the test, else a copy found locally, else the test is skipped.
 */
public final class LlamaCppReference
{
    /** Per text: llama.cpp's ids (special tokens parsed, no BOS) and its detokenization of them. */
    public record Tokenization(List<int[]> ids, List<String> texts, int bos, int eos, boolean addBos) {}

    /**
     * Per prompt: llama.cpp's prompt ids (BOS included where the model adds one), its greedy output ids, and at each step
     * its most likely tokens, best first.
     */
    public record Generation(List<int[]> prompts, List<int[]> outputs, List<List<List<Candidate>>> top) {}

    /** A token and its natural-log probability: differences of these are differences of llama.cpp's logits. */
    public record Candidate(int token, double logProbability) {}

    private LlamaCppReference() {}

    @SuppressWarnings("unchecked")
    public static Tokenization tokenize(Path gguf, List<String> texts)
            throws IOException, InterruptedException
    {
        Map<String, Object> out = run("llamacpp-tokenize.mjs", gguf, NodeReference.jsonArray(texts));
        return new Tokenization(ids(out.get("ids")), (List<String>) out.get("texts"), ((Long) out.get("bos")).intValue(),
                ((Long) out.get("eos")).intValue(), (Boolean) out.get("addBos"));
    }

    /**
     * @param kvType the KV cache's element type, {@code F16} (llama.cpp's default) or {@code F32}
     * @param flashAttention {@code auto} (the default, on for a CPU), {@code true} or {@code false}
     */
    @SuppressWarnings("unchecked")
    public static Generation greedy(Path gguf, List<String> prompts, int tokens, String kvType, String flashAttention)
            throws IOException, InterruptedException
    {
        String request = "{\"prompts\": " + NodeReference.jsonArray(prompts) + ", \"tokens\": " + tokens + ", \"kvType\": \"" + kvType
                + "\", \"flashAttention\": " + (flashAttention.equals("auto") ? "\"auto\"" : flashAttention) + "}";
        Map<String, Object> out = run("llamacpp-greedy.mjs", gguf, request);
        List<List<List<Candidate>>> top = ((List<List<List<List<Number>>>>) out.get("top")).stream()
                .map(steps -> steps.stream().map(step -> step.stream().map(c -> new Candidate(c.get(0).intValue(), c.get(1).doubleValue())).toList())
                        .toList())
                .toList();
        return new Generation(ids(out.get("prompts")), ids(out.get("outputs")), top);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> run(String script, Path gguf, String input)
            throws IOException, InterruptedException
    {
        Path modules = NodeReference.nodeModules("node-llama-cpp/package.json");
        Path dir = Files.createTempDirectory("handoff-llamacpp");
        try {
            Path in = Files.writeString(dir.resolve("in.json"), input, StandardCharsets.UTF_8);
            Path out = dir.resolve("out.json");
            Process node;
            try {
                node = new ProcessBuilder("node", testkit().resolve(script).toString(), modules.toString(), gguf.toString(), in.toString(),
                        out.toString()).redirectErrorStream(true).start();
            }
            catch (IOException e) {
                if (System.getenv(NodeReference.ENV) != null) {
                    fail(NodeReference.ENV + " is set but node cannot be started: " + e.getMessage());
                }
                assumeTrue(false, "node is not on the PATH: " + e.getMessage());
                throw e;
            }
            node.getOutputStream().close();
            String log = new String(node.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(node.waitFor(120, TimeUnit.SECONDS)).as("node " + script + " finished").isTrue();
            assertThat(node.exitValue()).as("node " + script + "'s exit status; output ends: " + log.substring(Math.max(0, log.length() - 2_000)))
                    .isZero();
            return (Map<String, Object>) Json.parse(Files.readString(out, StandardCharsets.UTF_8), script + " output");
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

    /** The repository's {@code testkit-node/}, found upwards from the working directory (a module's folder under Maven). */
    private static Path testkit()
    {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve("testkit-node/llamacpp-tokenize.mjs"))) {
                return dir.resolve("testkit-node");
            }
        }
        throw new IllegalStateException("no testkit-node/ with the llama.cpp scripts above " + Path.of("").toAbsolutePath());
    }

    @SuppressWarnings("unchecked")
    private static List<int[]> ids(Object lists)
    {
        return ((List<List<Long>>) lists).stream().map(l -> l.stream().mapToInt(Long::intValue).toArray()).toList();
    }
}
