package io.handoff.http.base;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.IntNode;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Fields SGLang's and OpenAI's clients send for features this engine does not have (LoRA adapters, images, hidden
 * states, sessions...): accepted at the value that asks for nothing (null, false), refused with a 400 naming the field
 * otherwise, so SGLang's {@code bench_serving} payloads pass unchanged and no client gets less than it asked for.
 */
public final class UnusedFields
{
    private record Unused(JsonNode neutral, String why) {}

    private static final Map<String, Unused> GENERATE = generate();
    private static final Map<String, Unused> OPENAI = openAi();

    private UnusedFields() {}

    private static Map<String, Unused> generate()
    {
        Map<String, Unused> fields = new LinkedHashMap<>(openAi());
        String textOnly = "this model takes text only";
        fields.put("lora_id", new Unused(null, "LoRA adapters are not served"));
        fields.put("video_data", new Unused(null, textOnly));
        fields.put("audio_data", new Unused(null, textOnly));
        fields.put("input_embeds", new Unused(null, "prompts are token ids or text"));
        fields.put("modalities", new Unused(null, textOnly));
        fields.put("return_routed_experts", new Unused(BooleanNode.FALSE, "routed experts are not reported"));
        return Map.copyOf(fields);
    }

    private static Map<String, Unused> openAi()
    {
        Map<String, Unused> fields = new LinkedHashMap<>();
        fields.put("lora_path", new Unused(null, "LoRA adapters are not served"));
        fields.put("image_data", new Unused(null, "this model takes text only"));
        fields.put("return_hidden_states", new Unused(BooleanNode.FALSE, "hidden states are not returned"));
        fields.put("custom_logit_processor", new Unused(null, "custom logit processors are not run"));
        fields.put("session_params", new Unused(null, "sessions are not kept"));
        fields.put("data_parallel_rank", new Unused(IntNode.valueOf(0), "this server is one data-parallel rank"));
        return fields;
    }

    public static Set<String> generateNames()
    {
        return GENERATE.keySet();
    }

    public static Set<String> openAiNames()
    {
        return Set.copyOf(OPENAI.keySet());
    }

    /** Refuses any of {@code /generate}'s unused fields that asks for something. */
    public static void checkGenerate(JsonFields body)
    {
        check(body, GENERATE);
    }

    /** Refuses any of the OpenAI APIs' unused fields that asks for something. */
    public static void checkOpenAi(JsonFields body)
    {
        check(body, OPENAI);
    }

    private static void check(JsonFields body, Map<String, Unused> fields)
    {
        fields.forEach((name, unused) -> body.onlyNeutral(name, unused.neutral(), unused.why()));
    }
}
