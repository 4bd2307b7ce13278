package io.handoff.core.model.gguf;

import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/** How llama.cpp names a Hugging Face tensor of a Llama-style decoder, and back. */
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
            Map.entry("mlp.down_proj.weight", "ffn_down.weight"));
    private static final Map<String, String> LAYER_BACK = invert(LAYER);
    private static final Map<String, String> GLOBAL_BACK = invert(GLOBAL);
    private static final Pattern HF_LAYER = Pattern.compile("model\\.layers\\.(0|[1-9][0-9]{0,8})\\.(.+)");
    private static final Pattern GGUF_LAYER = Pattern.compile("blk\\.(0|[1-9][0-9]{0,8})\\.(.+)");

    private GgufTensorNames() {}

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
