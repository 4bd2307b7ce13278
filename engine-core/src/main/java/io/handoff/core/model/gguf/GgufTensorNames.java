package io.handoff.core.model.gguf;

import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * How llama.cpp names a Hugging Face tensor of a Llama-style or DeepSeek decoder, and back. DeepSeek's routed experts are
 * stacked by llama.cpp into one tensor per projection ({@code blk.L.ffn_gate_exps.weight [experts, rows, cols]}); an
 * expert's matrix is a slice of it ({@link #expert}). The split {@code attn_k_b}/{@code attn_v_b} form of
 * {@code kv_b_proj} has no one-to-one name; {@link GgufWeights} joins it.
 */
public final class GgufTensorNames
{
    private static final Map<String, String> GLOBAL = Map.of(
            "model.embed_tokens.weight", "token_embd.weight",
            "model.norm.weight", "output_norm.weight",
            "lm_head.weight", "output.weight");
    private static final Map<String, String> LAYER = Map.ofEntries(
            Map.entry("input_layernorm.weight", "attn_norm.weight"),
            Map.entry("self_attn.q_proj.weight", "attn_q.weight"),
            Map.entry("self_attn.k_proj.weight", "attn_k.weight"),
            Map.entry("self_attn.v_proj.weight", "attn_v.weight"),
            Map.entry("self_attn.o_proj.weight", "attn_output.weight"),
            Map.entry("self_attn.q_proj.bias", "attn_q.bias"),
            Map.entry("self_attn.k_proj.bias", "attn_k.bias"),
            Map.entry("self_attn.v_proj.bias", "attn_v.bias"),
            Map.entry("self_attn.q_norm.weight", "attn_q_norm.weight"),
            Map.entry("self_attn.k_norm.weight", "attn_k_norm.weight"),
            Map.entry("post_attention_layernorm.weight", "ffn_norm.weight"),
            Map.entry("mlp.gate_proj.weight", "ffn_gate.weight"),
            Map.entry("mlp.up_proj.weight", "ffn_up.weight"),
            Map.entry("mlp.down_proj.weight", "ffn_down.weight"),
            // DeepSeek: MLA
            Map.entry("self_attn.q_a_proj.weight", "attn_q_a.weight"),
            Map.entry("self_attn.q_a_layernorm.weight", "attn_q_a_norm.weight"),
            Map.entry("self_attn.q_b_proj.weight", "attn_q_b.weight"),
            Map.entry("self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight"),
            Map.entry("self_attn.kv_a_layernorm.weight", "attn_kv_a_norm.weight"),
            Map.entry("self_attn.kv_b_proj.weight", "attn_kv_b.weight"),
            // DeepSeek: the router, its correction bias and the shared experts
            Map.entry("mlp.gate.weight", "ffn_gate_inp.weight"),
            Map.entry("mlp.gate.e_score_correction_bias", "exp_probs_b.bias"),
            Map.entry("mlp.shared_experts.gate_proj.weight", "ffn_gate_shexp.weight"),
            Map.entry("mlp.shared_experts.up_proj.weight", "ffn_up_shexp.weight"),
            Map.entry("mlp.shared_experts.down_proj.weight", "ffn_down_shexp.weight"));
    private static final Pattern HF_EXPERT = Pattern.compile("model\\.layers\\.(0|[1-9][0-9]{0,8})\\.mlp\\.experts\\.(0|[1-9][0-9]{0,8})\\.(gate|up|down)_proj\\.weight");
    private static final Map<String, String> LAYER_BACK = invert(LAYER);
    private static final Map<String, String> GLOBAL_BACK = invert(GLOBAL);
    private static final Pattern HF_LAYER = Pattern.compile("model\\.layers\\.(0|[1-9][0-9]{0,8})\\.(.+)");
    private static final Pattern GGUF_LAYER = Pattern.compile("blk\\.(0|[1-9][0-9]{0,8})\\.(.+)");

    private GgufTensorNames() {}

    /** Expert {@code expert}'s matrix: the slice {@code [expert]} of the stacked tensor {@code ggufName}. */
    public record ExpertSlice(String ggufName, int expert) {}

    /** Where a routed expert's projection ({@code model.layers.L.mlp.experts.E.gate_proj.weight}) is; empty for other names. */
    public static Optional<ExpertSlice> expert(String hfName)
    {
        Matcher m = HF_EXPERT.matcher(hfName);
        if (!m.matches()) {
            return Optional.empty();
        }
        return Optional.of(new ExpertSlice("blk." + m.group(1) + ".ffn_" + m.group(3) + "_exps.weight", Integer.parseInt(m.group(2))));
    }

    /** The GGUF name of a Hugging Face tensor name, empty when llama.cpp has no counterpart the engine maps. */
    public static Optional<String> toGguf(String hfName)
    {
        return translate(hfName, GLOBAL, HF_LAYER, LAYER, "blk.");
    }

    /** The Hugging Face name of a GGUF tensor name, empty for tensors the engine does not map ({@code rope_freqs.weight}, …). */
    public static Optional<String> toHf(String ggufName)
    {
        return translate(ggufName, GLOBAL_BACK, GGUF_LAYER, LAYER_BACK, "model.layers.");
    }

    private static Optional<String> translate(String name, Map<String, String> global, Pattern layer, Map<String, String> perLayer,
            String prefix)
    {
        if (global.containsKey(name)) {
            return Optional.of(global.get(name));
        }
        Matcher m = layer.matcher(name);
        if (!m.matches() || !perLayer.containsKey(m.group(2))) {
            return Optional.empty();
        }
        return Optional.of(prefix + m.group(1) + "." + perLayer.get(m.group(2)));
    }

    private static Map<String, String> invert(Map<String, String> map)
    {
        return map.entrySet().stream().collect(Collectors.toUnmodifiableMap(Map.Entry::getValue, Map.Entry::getKey));
    }
}
