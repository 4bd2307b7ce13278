package io.handoff.core.model.gguf;

import io.handoff.core.model.DeepseekConfig;
import io.handoff.core.model.MoeConfig;
import io.handoff.core.model.RopeScaling;

import static java.util.Objects.requireNonNull;

/**
 * Reads llama.cpp's {@code deepseek2} metadata into a {@link DeepseekConfig}. llama.cpp's converter writes the per-head
 * query/key and value widths under {@code attention.key_length_mla} / {@code value_length_mla} and the cached latent's
 * widths ({@code kv_lora_rank + rope}, {@code kv_lora_rank}) under the plain keys; older files have only the plain keys,
 * holding the per-head widths. Routing is not stored as a method: sigmoid gating implies V3's correction bias and
 * groups scored by their top two, softmax V2's groups scored by their best expert.
 */
public final class DeepseekGgufConfig
{
    public static final String ARCHITECTURE = "deepseek2";
    private static final int MAX = Integer.MAX_VALUE;

    private DeepseekGgufConfig() {}

    /**
     * @param tieWordEmbeddings whether the file lacks {@code output.weight} (the token embedding is the output head);
     *         metadata does not say it
     */
    public static DeepseekConfig read(GgufMetadata m, boolean tieWordEmbeddings)
    {
        requireNonNull(m, "metadata is null");
        String architecture = m.string("general.architecture");
        if (!architecture.equals(ARCHITECTURE)) {
            throw new IllegalArgumentException("general.architecture is '" + architecture + "'; this reader takes '" + ARCHITECTURE + "'");
        }
        int rope = m.intValue(key("rope.dimension_count"), 1, MAX);
        int kvLoraRank = m.intValue(key("attention.kv_lora_rank"), 1, MAX);
        int keyLength = m.intValue(key("attention.key_length"), 1, MAX);
        int valueLength = m.intValue(key("attention.value_length"), 1, MAX);
        int qkHeadDim = keyLength;
        int vHeadDim = valueLength;
        if (m.contains(key("attention.key_length_mla"))) {
            if (keyLength != kvLoraRank + rope || valueLength != kvLoraRank) {
                throw new IllegalArgumentException(key("attention.key_length") + " " + keyLength + " and " + key("attention.value_length")
                        + " " + valueLength + " must be the cached latent's widths, kv_lora_rank + rope = " + (kvLoraRank + rope)
                        + " and kv_lora_rank = " + kvLoraRank + ", when " + key("attention.key_length_mla") + " is present");
            }
            qkHeadDim = m.intValue(key("attention.key_length_mla"), 1, MAX);
            vHeadDim = m.intValue(key("attention.value_length_mla"), 1, MAX);
        }
        if (qkHeadDim <= rope) {
            throw new IllegalArgumentException("the key head width " + qkHeadDim + " (" + key("attention.key_length_mla") + ", or "
                    + key("attention.key_length") + " in older files) must exceed " + key("rope.dimension_count") + " " + rope
                    + ": it is qk_nope_head_dim + qk_rope_head_dim");
        }
        float theta = (float) (double) m.optionalNumber(key("rope.freq_base")).orElse(10000.0);
        return new DeepseekConfig(
                vocabSize(m),
                m.intValue(key("embedding_length"), 1, MAX),
                m.intValue(key("block_count"), 1, MAX),
                m.intValue(key("attention.head_count"), 1, MAX),
                m.optionalInt(key("attention.q_lora_rank"), 0, MAX).orElse(0),
                kvLoraRank,
                qkHeadDim - rope,
                rope,
                vHeadDim,
                m.optionalInt(key("leading_dense_block_count"), 0, MAX).orElse(0),
                m.intValue(key("feed_forward_length"), 1, MAX),
                moe(m),
                (float) (double) m.optionalNumber(key("attention.layer_norm_rms_epsilon")).orElseThrow(
                        () -> new IllegalArgumentException("metadata key '" + key("attention.layer_norm_rms_epsilon") + "' is missing")),
                theta,
                ropeScaling(m),
                m.intValue(key("context_length"), 1, MAX),
                tieWordEmbeddings);
    }

    private static MoeConfig moe(GgufMetadata m)
    {
        int gating = m.optionalInt(key("expert_gating_func"), 0, MAX).orElse(1);
        MoeConfig.Scoring scoring = switch (gating) {
            case 1 -> MoeConfig.Scoring.SOFTMAX;
            case 2 -> MoeConfig.Scoring.SIGMOID;
            default -> throw new IllegalArgumentException("metadata key '" + key("expert_gating_func") + "' is " + gating
                    + "; supported: 1 (softmax), 2 (sigmoid)");
        };
        boolean sigmoid = scoring == MoeConfig.Scoring.SIGMOID;
        return new MoeConfig(
                m.intValue(key("expert_count"), 1, MAX),
                m.intValue(key("expert_used_count"), 1, MAX),
                m.optionalInt(key("expert_shared_count"), 0, MAX).orElse(0),
                m.intValue(key("expert_feed_forward_length"), 1, MAX),
                scoring,
                sigmoid,
                m.optionalInt(key("expert_group_count"), 1, MAX).orElse(1),
                m.optionalInt(key("expert_group_used_count"), 1, MAX).orElse(1),
                sigmoid ? MoeConfig.GroupScoring.TOP_TWO_SUM : MoeConfig.GroupScoring.MAX,
                m.optionalBool(key("expert_weights_norm")).orElse(false),
                (float) (double) m.optionalNumber(key("expert_weights_scale")).orElse(1.0));
    }

    /**
     * llama.cpp keeps DeepSeek's {@code 0.1 * mscale_all_dim} as {@code yarn_log_multiplier} and has no separate
     * {@code mscale}: it runs as if the two were equal (attention factor 1), as DeepSeek's published configs have them.
     */
    private static RopeScaling ropeScaling(GgufMetadata m)
    {
        String type = m.optionalString(key("rope.scaling.type")).orElse("none");
        return switch (type) {
            case "none" -> RopeScaling.NONE;
            case "yarn" -> {
                float mscaleAllDim = (float) (m.optionalNumber(key("rope.scaling.yarn_log_multiplier")).orElse(0.0) / 0.1);
                yield new RopeScaling.Yarn(
                        (float) (double) m.optionalNumber(key("rope.scaling.factor")).orElseThrow(
                                () -> new IllegalArgumentException("metadata key '" + key("rope.scaling.factor") + "' is missing; yarn needs it")),
                        m.intValue(key("rope.scaling.original_context_length"), 1, MAX),
                        (float) (double) m.optionalNumber(key("rope.scaling.yarn_beta_fast")).orElse((double) RopeScaling.Yarn.DEFAULT_BETA_FAST),
                        (float) (double) m.optionalNumber(key("rope.scaling.yarn_beta_slow")).orElse((double) RopeScaling.Yarn.DEFAULT_BETA_SLOW),
                        mscaleAllDim,
                        mscaleAllDim);
            }
            default -> throw new IllegalArgumentException("metadata key '" + key("rope.scaling.type") + "' is '" + type
                    + "'; DeepSeek supports none or yarn");
        };
    }

    private static int vocabSize(GgufMetadata m)
    {
        if (m.contains(key("vocab_size"))) {
            return m.intValue(key("vocab_size"), 1, MAX);
        }
        if (m.get(GgufModel.TOKENS_KEY).map(GgufValue::value).orElse(null) instanceof GgufValue.GgufArray tokens) {
            return tokens.elements().size();
        }
        throw new IllegalArgumentException("neither '" + key("vocab_size") + "' nor an array '" + GgufModel.TOKENS_KEY
                + "' says the vocabulary size; the file lacks its tokenizer");
    }

    private static String key(String suffix)
    {
        return ARCHITECTURE + "." + suffix;
    }
}
