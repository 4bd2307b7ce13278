package io.handoff.core.runtime;

import com.typesafe.config.Config;
import io.handoff.core.json.JsonFile;
import io.handoff.core.model.ByteTokenizer;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.SyntheticWeights;
import io.handoff.core.model.WeightSource;
import io.handoff.core.model.hf.CheckpointIdentity;
import io.handoff.core.model.hf.DeepseekHfConfig;
import io.handoff.core.model.hf.HfModelConfig;
import io.handoff.core.model.hf.SafetensorsWeights;
import io.handoff.core.model.tokenizer.PromptBos;
import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.core.model.tokenizer.TokenizerJson;
import io.handoff.spi.attention.KvDtype;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * Where a model comes from: a seeded preset ({@code handoff.model.name}, byte tokenizer) or, when
 * {@code handoff.model.path} names a directory, a Hugging Face checkpoint (config.json, safetensors,
 * tokenizer.json) of a Llama-style or a DeepSeek-V2/V3 decoder, or a GGUF file. Whatever a checkpoint needs that the transformer lacks is refused here, naming the
 * path, rather than served with wrong logits. A request is at most {@code handoff.model.max-context} tokens,
 * {@code max_position_embeddings} and any {@code sliding_window}, whichever is smallest.
 *
 * @param weights closed by {@link #close()}; a transformer built from them reads their mappings, so whoever builds one keeps
 *                the source open until the transformer is closed
 */
public record ModelSource(ModelConfig config, WeightSource weights, Tokenizer tokenizer, Optional<ChatTemplateText> chatTemplate)
        implements AutoCloseable
{
    public static final String PATH_KEY = "handoff.model.path";
    public static final String NAME_KEY = "handoff.model.name";
    public static final String MAX_CONTEXT_KEY = "handoff.model.max-context";
    public static final String SERVED_NAME_KEY = "handoff.model.served-name";
    public static final String QUANTIZED_ACTIVATIONS_KEY = "handoff.model.quantized-activations";

    public ModelSource
    {
        requireNonNull(config, "config is null");
        requireNonNull(weights, "weights is null");
        requireNonNull(tokenizer, "tokenizer is null");
        requireNonNull(chatTemplate, "chatTemplate is null");
        if (tokenizer.vocabSize() > config.vocabSize()) {
            throw new IllegalArgumentException("model '" + config.name() + "': its tokenizer has " + tokenizer.vocabSize()
                    + " ids but the model's vocabulary only " + config.vocabSize() + "; the tokenizer does not belong to the model");
        }
    }

    /**
     * The KV pool's element type under {@code handoff.kv.dtype = auto}: F32 for the built-in seeded models, whose
     * outputs the tests pin; F16 for a checkpoint, as llama.cpp caches it by default: half the pool memory and half
     * the bytes a prefill sends, with every attention operand in F16 and F32 accumulation.
     */
    public KvDtype defaultKvDtype()
    {
        return weights instanceof SyntheticWeights ? KvDtype.F32 : KvDtype.F16;
    }

    /** Without a chat template. */
    public ModelSource(ModelConfig config, WeightSource weights, Tokenizer tokenizer)
    {
        this(config, weights, tokenizer, Optional.empty());
    }

    /** The model the configuration names, under its served name when {@value #SERVED_NAME_KEY} gives one. */
    public static ModelSource open(Config config)
    {
        ModelSource source = openModel(config);
        String servedName = config.getString(SERVED_NAME_KEY).strip();
        return servedName.isEmpty() ? source : new ModelSource(source.config().withName(servedName), source.weights(), source.tokenizer(), source.chatTemplate());
    }

    private static ModelSource openModel(Config config)
    {
        String path = config.getString(PATH_KEY);
        if (path.isBlank()) {
            ModelConfig model = ModelConfig.byName(config.getString(NAME_KEY));
            return new ModelSource(model, new SyntheticWeights(model.weightsSeed()), new ByteTokenizer());
        }
        return open(Path.of(path), config.getInt(MAX_CONTEXT_KEY), quantizedActivations(config));
    }

    /** {@value #QUANTIZED_ACTIVATIONS_KEY}: {@code auto} rounds a block-quantized matrix's input as llama.cpp does, {@code off} keeps it exact. */
    public static boolean quantizedActivations(Config config)
    {
        String setting = config.getString(QUANTIZED_ACTIVATIONS_KEY);
        return switch (setting) {
            case "auto" -> true;
            case "off" -> false;
            default -> throw new IllegalArgumentException(QUANTIZED_ACTIVATIONS_KEY + " = '" + setting + "' is not one of auto | off");
        };
    }

    /** A checkpoint, served with at most {@code maxContext} tokens per request, a GGUF file's quantized matrices rounding their inputs as llama.cpp does. */
    public static ModelSource open(Path path, int maxContext)
    {
        return open(path, maxContext, true);
    }

    /**
     * A Hugging Face checkpoint directory or a GGUF file, served with at most {@code maxContext} tokens per request.
     *
     * @param quantizedActivations whether a GGUF file's block-quantized matrices round their inputs as llama.cpp's CPU build
     *                             does (Q8_0 or Q8_K) rather than multiply them exactly
     */
    public static ModelSource open(Path path, int maxContext, boolean quantizedActivations)
    {
        if (Files.isRegularFile(path) && path.getFileName().toString().endsWith(".gguf")) {
            return GgufModelSource.open(path, maxContext, quantizedActivations);
        }
        if (!Files.isDirectory(path)) {
            throw new IllegalArgumentException(PATH_KEY + " " + path + " is not a directory or a .gguf file; give a Hugging Face "
                    + "model directory (config.json, model.safetensors, tokenizer.json), a GGUF file, or leave it empty to serve " + NAME_KEY);
        }
        Path file = path.resolve(HfModelConfig.FILE);
        Map<String, Object> json = JsonFile.readObject(file, HfModelConfig.MAX_CONFIG_BYTES);
        Tokenizer tokenizer = withPromptBos(path, json, TokenizerJson.read(path));
        Path name = path.toAbsolutePath().normalize().getFileName();
        ModelConfig model = checkpointConfig(path, json, name == null ? "model" : name.toString(), Math.min(maxContext, slidingWindow(json)));
        SafetensorsWeights weights = SafetensorsWeights.open(path, json);
        try {
            return new ModelSource(model, weights, tokenizer, ChatTemplateText.fromHuggingFace(path));
        }
        catch (RuntimeException e) {
            weights.close();
            throw e;
        }
    }

    /**
     * The shape of the checkpoint in {@code path}: DeepSeek-V2/V3 (MLA and mixture of experts) or a Llama-style GQA decoder,
     * by config.json's {@code architectures}.
     */
    private static ModelConfig checkpointConfig(Path path, Map<String, Object> json, String name, int maxContext)
    {
        Path file = path.resolve(HfModelConfig.FILE);
        if (DeepseekHfConfig.isDeepseek(json)) {
            return DeepseekHfConfig.parse(json, file.toString()).toModelConfig(name, maxContext, CheckpointIdentity.of(path));
        }
        HfModelConfig hf = HfModelConfig.parse(json, file.toString());
        List<String> missing = hf.unsupportedFeatures();
        if (!missing.isEmpty()) {
            throw new IllegalArgumentException(path + " (" + hf.architecture().hfName() + ") needs what the engine does not implement yet: "
                    + String.join(", ", missing) + "; serve a checkpoint without it");
        }
        return hf.toModelConfig(name, maxContext, CheckpointIdentity.of(path));
    }

    /**
     * The prompt rule of {@link PromptBos}: config.json names a bos_token_id, the tokenizer's files add none to a prompt,
     * and tokenizer_config.json does not say add_bos_token (an explicit false is obeyed).
     */
    private static Tokenizer withPromptBos(Path path, Map<String, Object> config, Tokenizer tokenizer)
    {
        Object bos = config.get("bos_token_id");
        Path tokenizerConfig = path.resolve(TokenizerJson.CONFIG_FILE);
        boolean explicit = Files.isRegularFile(tokenizerConfig)
                && JsonFile.readObject(tokenizerConfig, 16 * 1024 * 1024).containsKey("add_bos_token");
        int[] empty = tokenizer.encodePrompt("");
        if (!(bos instanceof Long id) || explicit || (empty.length > 0 && empty[0] == id) || id < 0 || id >= tokenizer.vocabSize()) {
            return tokenizer;
        }
        return new PromptBos(tokenizer, Math.toIntExact(id));
    }

    /**
     * Mistral's {@code sliding_window}: within it, attention is full attention, which is all the transformer does,
     * so requests are kept inside it rather than refusing the checkpoint.
     */
    private static int slidingWindow(Map<String, Object> config)
    {
        Object window = config.get("sliding_window");
        return window instanceof Long n && n > 0 && n < Integer.MAX_VALUE ? (int) (long) n : Integer.MAX_VALUE;
    }

    @Override
    public void close()
    {
        if (weights instanceof AutoCloseable closeable) {
            try {
                closeable.close();
            }
            catch (Exception e) {
                throw new IllegalStateException("cannot close " + weights.description() + ": " + e, e);
            }
        }
    }
}
