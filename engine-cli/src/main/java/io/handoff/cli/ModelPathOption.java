package io.handoff.cli;

import io.handoff.core.runtime.ModelSource;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.Map;

/** {@code --model-path}: a Hugging Face checkpoint directory or a GGUF file to serve instead of a named preset. */
public final class ModelPathOption
{
    @Option(names = "--model-path", paramLabel = "PATH",
            description = "Hugging Face checkpoint directory (config.json, model.safetensors, tokenizer.json) or .gguf file; sets "
                    + ModelSource.PATH_KEY + ".")
    public Path modelPath;

    /** Puts the path, made absolute so child processes started elsewhere see the same directory, into {@code overrides}. */
    public void applyTo(Map<String, String> overrides)
    {
        if (modelPath != null) {
            overrides.put(ModelSource.PATH_KEY, modelPath.toAbsolutePath().normalize().toString());
        }
    }
}
