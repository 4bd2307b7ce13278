package io.handoff.tools;

import io.handoff.core.model.gguf.GgufFile;
import io.handoff.core.model.gguf.GgufQuantizer;
import io.handoff.core.model.gguf.GgufTensorType;
import io.handoff.core.model.gguf.HfToGguf;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;

@Command(name = "quantize", mixinStandardHelpOptions = true,
        description = {"Write a GGUF file with its matrices quantized (q4_0, q4_1, q5_0, q5_1, q8_0, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k, f16,",
                "bf16), by llama.cpp's per-tensor recipe for the _s and _m mixes, from a Hugging Face directory (Llama, Mistral, Qwen2,",
                "Qwen3) or an F32, F16 or BF16 GGUF file; tokenizer and chat template carried over. llama.cpp loads the result."})
final class QuantizeCommand
        implements Callable<Integer>
{
    @Option(names = "--model-path", required = true, paramLabel = "SRC",
            description = "A Hugging Face checkpoint directory (config.json, safetensors, tokenizer.json) or an F32, F16 or BF16 .gguf file.")
    Path source;

    @Option(names = "--type", required = true, paramLabel = "TYPE", description = "What to write: q4_k_m (the usual choice), q5_k_m, q6_k, q8_0, q4_0, ...")
    String type;

    @Option(names = "--out", required = true, paramLabel = "FILE", description = "The GGUF file to write.")
    Path out;

    @Option(names = "--force", description = "Replace FILE if it exists.")
    boolean force;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws IOException
    {
        GgufQuantizer.Target target;
        try {
            target = GgufQuantizer.Target.parse(type);
        }
        catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), "--type: " + e.getMessage());
        }
        if (Files.exists(out) && !force) {
            throw new ParameterException(spec.commandLine(), "--out " + out + " exists; choose another file or pass --force to replace it");
        }
        if (!Files.exists(source)) {
            throw new ParameterException(spec.commandLine(), "--model-path " + source + " does not exist");
        }
        PrintStream err = System.err;
        boolean terminal = System.console() != null;
        Map<GgufTensorType, Integer> counts = new TreeMap<>();
        GgufQuantizer.Progress progress = (index, count, name, tensorType, bytes) -> {
            counts.merge(tensorType, 1, Integer::sum);
            if (terminal) {
                err.printf("\r[%d/%d] %-40s %s", index, count, name, tensorType);
                if (index == count) {
                    err.println();
                }
            }
        };
        Path converted = null;
        try {
            Path gguf = source;
            if (Files.isDirectory(source)) {
                converted = Files.createTempFile(out.toAbsolutePath().getParent(), ".handoff-convert-", ".gguf");
                HfToGguf.convert(source, converted);
                gguf = converted;
            }
            try (GgufFile file = GgufFile.open(gguf)) {
                GgufQuantizer.quantize(file, target, out, progress);
            }
        }
        catch (IllegalArgumentException | IllegalStateException e) {
            err.println("handoff quantize: " + e.getMessage());
            return 1;
        }
        finally {
            if (converted != null) {
                Files.deleteIfExists(converted);
            }
        }
        StringBuilder types = new StringBuilder();
        counts.forEach((t, n) -> types.append(types.isEmpty() ? "" : ", ").append(t).append(" x").append(n));
        System.out.printf("wrote %s (%.1f MiB, %s): %s%n", out, Files.size(out) / (1024.0 * 1024.0), target.name().toLowerCase(java.util.Locale.ROOT),
                types);
        return 0;
    }
}
