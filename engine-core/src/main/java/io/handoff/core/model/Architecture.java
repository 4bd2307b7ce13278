package io.handoff.core.model;

/** The transformer families the model runner implements. */
public enum Architecture
{
    /** DeepSeek-style multi-head latent attention: one latent KV row per token, absorbed attention. */
    MLA,
    /** Llama-style grouped-query attention with RoPE, RMSNorm and a SwiGLU MLP. */
    GQA
}
