package io.handoff.core.runtime;

import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.gguf.GgufFile;
import io.handoff.core.model.gguf.GgufModel;
import io.handoff.core.model.gguf.GgufTensor;
import io.handoff.core.model.gguf.GgufTensorType;
import io.handoff.core.model.gguf.GgufTokenizerData;
import io.handoff.core.model.gguf.GgufWeights;
import io.handoff.core.model.tokenizer.BpeTokenizer;
import io.handoff.core.model.tokenizer.SentencePieceTokenizer;
import io.handoff.core.model.tokenizer.Tokenizer;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;

/**
 * A GGUF file as a {@link ModelSource}: its weights (mapped, in their file types, Q/K rows back in Hugging Face order), the
 * configuration from its metadata, its embedded tokenizer (byte-level BPE for {@code tokenizer.ggml.model = gpt2},
 * SentencePiece BPE for {@code llama}) and chat template. What the transformer cannot run yet (RoPE scaling, see
 * {@link GgufModel}) is refused.
 */
final class GgufModelSource
{
    private GgufModelSource() {}

    static ModelSource open(Path path, int maxContext, boolean quantizedActivations)
    {
        GgufWeights weights = GgufWeights.open(path, quantizedActivations);
        try {
            GgufModel model = weights.model();
            GgufTokenizerData data = GgufTokenizerData.read(weights.file());
            Tokenizer tokenizer = tokenizer(path, data);
            // lm_head.weight is served from token_embd when the file ties them, so the transformer needs no tying of its own
            ModelConfig config = model.config().withServing(maxContext, identity(weights.file(), quantizedActivations));
            Optional<ChatTemplateText> chat = data.chatTemplate().map(template -> new ChatTemplateText(template, token(data, data.bos()),
                    token(data, data.eos())));
            return new ModelSource(config, weights, tokenizer, chat);
        }
        catch (RuntimeException e) {
            weights.close();
            throw e;
        }
    }

    /** The file's tokenizer ({@link GgufTokenizerData#MODELS} are the two kinds read); a vocabulary it refuses names the file. */
    private static Tokenizer tokenizer(Path path, GgufTokenizerData data)
    {
        try {
            return switch (data.model()) {
                case "gpt2" -> BpeTokenizer.of(data.tokens(), data.merges(), data.tokenTypes(), data.bos(), data.eos(), data.addBos(), data.pre());
                case "llama" -> SentencePieceTokenizer.of(data.tokens(), data.scores(), data.tokenTypes(), data.bos(), data.eos(), data.addBos(),
                        data.addEos(), data.addSpacePrefix());
                default -> throw new IllegalStateException("tokenizer.ggml.model '" + data.model() + "' passed GgufTokenizerData's check");
            };
        }
        catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(path + ": " + e.getMessage(), e);
        }
    }

    private static String token(GgufTokenizerData data, int id)
    {
        return id >= 0 && id < data.tokens().size() ? data.tokens().get(id) : "";
    }

    /**
     * What tells two GGUF files apart without reading their weights: every tensor's name, type, shape and place, and the
     * vocabulary; and how its quantized matrices multiply, which changes the logits (a prefill and a decode must agree on it).
     */
    private static String identity(GgufFile file, boolean quantizedActivations)
    {
        MessageDigest digest;
        try {
            digest = MessageDigest.getInstance("SHA-256");
        }
        catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
        for (Map.Entry<String, GgufTensor> entry : file.tensors().entrySet()) {
            GgufTensor tensor = entry.getValue();
            digest.update((entry.getKey() + ":" + tensor.type() + ":" + java.util.Arrays.toString(tensor.dims()) + "@" + tensor.offset() + "\n")
                    .getBytes(StandardCharsets.UTF_8));
            // a sample of each tensor's bytes: the same shapes with other values are another checkpoint
            long sample = Math.min(4096, tensor.data().byteSize());
            digest.update(tensor.data().asSlice(0, sample).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
        }
        boolean quantized = file.tensors().values().stream().anyMatch(tensor -> tensor.type().blockFormat().isPresent() || tensor.type() == GgufTensorType.Q8_0);
        return "gguf-" + HexFormat.of().formatHex(digest.digest(), 0, 8) + (quantized && !quantizedActivations ? "-exact-activations" : "");
    }
}
