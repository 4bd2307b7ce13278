package io.handoff.core.model.gguf;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * The {@code general.architecture} values read: Llama-style GQA decoders whose tensors map one to one
 * onto Hugging Face's names. llama.cpp's converter permutes the rows of Llama's q and k projections
 * (it rotates interleaved pairs where Transformers rotates halves); Qwen2 and Qwen3 are written
 * unpermuted because llama.cpp already rotates them by halves ("NEOX" RoPE). DeepSeek's {@code deepseek2} (MLA and
 * mixture of experts, read by {@link DeepseekGgufConfig}) is written unpermuted too: both rotate adjacent pairs.
 */
public enum GgufArchitecture
{
    LLAMA("llama", true),
    QWEN2("qwen2", false),
    QWEN3("qwen3", false),
    DEEPSEEK2(DeepseekGgufConfig.ARCHITECTURE, false);

    public static final String KEY = "general.architecture";

    private final String ggufName;
    private final boolean permutedQk;

    GgufArchitecture(String ggufName, boolean permutedQk)
    {
        this.ggufName = ggufName;
        this.permutedQk = permutedQk;
    }

    /** The value of {@code general.architecture}, also the prefix of the model's keys ({@code llama.block_count}). */
    public String ggufName()
    {
        return ggufName;
    }

    /** Whether the file's q and k projection rows are in llama.cpp's interleaved order, to be undone for Transformers' layout. */
    public boolean permutedQk()
    {
        return permutedQk;
    }

    /** The key {@code <architecture>.<suffix>}. */
    public String key(String suffix)
    {
        return ggufName + "." + suffix;
    }

    public static GgufArchitecture of(GgufFile file)
    {
        String name = file.metadata().string(KEY);
        return Arrays.stream(values()).filter(a -> a.ggufName.equals(name)).findFirst().orElseThrow(() -> unsupported(file.path(), name));
    }

    private static IllegalArgumentException unsupported(Path path, String name)
    {
        return new IllegalArgumentException(path + ": " + KEY + " is '" + name + "', which the engine does not run; supported: "
                + Arrays.stream(values()).map(GgufArchitecture::ggufName).collect(Collectors.joining(", ")));
    }
}
