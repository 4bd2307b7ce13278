package io.handoff.http.fields;

import io.handoff.core.model.SamplingParams;
import io.handoff.core.output.SamplingOptions;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.JsonFields;

import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The sampling and stop fields every API takes, read once for all three: SGLang's {@code sampling_params} object
 * ({@link Spelling#SGLANG}) and the top level of OpenAI's completions and chat bodies ({@link Spelling#OPENAI}), which
 * differ only in a few names ({@code min_new_tokens} / {@code min_tokens}) and in the temperature's range.
 */
public final class SamplingFields
{
    /** The field names of one API family. */
    public enum Spelling
    {
        SGLANG("min_new_tokens", 100),
        OPENAI("min_tokens", 2);

        private final String minTokens;
        private final double maxTemperature;

        Spelling(String minTokens, double maxTemperature)
        {
            this.minTokens = minTokens;
            this.maxTemperature = maxTemperature;
        }
    }

    public static final int MAX_STOP_STRINGS = 16;
    private static final Set<String> COMMON = Set.of("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "frequency_penalty",
            "presence_penalty", "seed", "stop", "stop_token_ids", "ignore_eos", "no_stop_trim", "skip_special_tokens",
            "spaces_between_special_tokens", "logit_bias");
    /** Constrained decoding and other options SGLang takes that this engine does not run: accepted only when null. */
    private static final Map<String, String> NOT_RUN = notRun();

    private SamplingFields() {}

    private static Map<String, String> notRun()
    {
        Map<String, String> fields = new LinkedHashMap<>();
        fields.put("structural_tag", "structural tags are not implemented; use json_schema, regex or ebnf, or tools");
        fields.put("stop_regex", "stop strings are matched literally; use stop");
        fields.put("custom_params", "custom logit processors are not run");
        fields.put("stream_interval", "every token is streamed as it is produced");
        return fields;
    }

    /** Every name {@link #parse} reads, for the API's list of known fields. */
    public static Set<String> names(Spelling spelling)
    {
        Set<String> names = new HashSet<>(COMMON);
        names.addAll(NOT_RUN.keySet());
        names.addAll(ConstraintFields.NAMES);
        names.add(spelling.minTokens);
        if (spelling == Spelling.SGLANG) {
            names.add("sampling_seed");
        }
        return Set.copyOf(names);
    }

    /**
     * Reads the fields of {@code body}; {@code maxNewTokens} is the request's output limit (the minimum may not exceed it)
     * and {@code vocabSize} bounds the stop token ids. Throws a 400 {@link ApiError} naming the first bad field.
     */
    public static SamplingOptions parse(JsonFields body, Spelling spelling, int maxNewTokens, int vocabSize)
    {
        NOT_RUN.forEach((name, why) -> body.onlyNeutral(name, null, why));
        body.raw("logit_bias").ifPresent(bias -> {
            if (!bias.isObject()) {
                throw ApiError.invalid("invalid_type", body.path("logit_bias"), body.path("logit_bias")
                        + " must be an object of token id to bias, got " + JsonFields.describe(bias));
            }
            if (!bias.isEmpty()) {
                throw ApiError.invalid("unsupported", body.path("logit_bias"), body.path("logit_bias")
                        + " is not supported (logit bias is not implemented); leave it out or send {}");
            }
        });
        body.bool("spaces_between_special_tokens"); // only a slow tokenizer's decoding reads it; the fast ones ignore it too
        int minNewTokens = body.integer(spelling.minTokens, 0, Integer.MAX_VALUE).map(Long::intValue).orElse(0);
        if (minNewTokens > maxNewTokens) {
            throw ApiError.invalid("invalid_value", body.path(spelling.minTokens), body.path(spelling.minTokens) + " = " + minNewTokens
                    + " exceeds the output limit of " + maxNewTokens + " tokens; set it to at most that");
        }
        SamplingParams sampling = new SamplingParams(
                body.number("temperature", 0, false, spelling.maxTemperature).orElse(1.0).floatValue(),
                body.number("top_p", 0, true, 1).orElse(1.0).floatValue(),
                topK(body),
                body.number("min_p", 0, false, 1).orElse(0.0).floatValue(),
                body.number("repetition_penalty", 0, true, SamplingParams.MAX_REPETITION_PENALTY).orElse(1.0).floatValue(),
                additivePenalty(body, "frequency_penalty"),
                additivePenalty(body, "presence_penalty"),
                minNewTokens,
                seed(body, spelling));
        return new SamplingOptions(sampling,
                body.strings("stop", MAX_STOP_STRINGS),
                body.intArray("stop_token_ids", 0, vocabSize).map(SamplingFields::boxed).orElse(Set.of()),
                body.bool("ignore_eos").orElse(false),
                body.bool("no_stop_trim").orElse(false),
                body.bool("skip_special_tokens").orElse(true),
                ConstraintFields.parse(body));
    }

    /** -1 (every token) or at least 1, as SGLang takes it: 0 would leave nothing to sample from. */
    private static int topK(JsonFields body)
    {
        Optional<Long> topK = body.integer("top_k", -1, Integer.MAX_VALUE);
        if (topK.isPresent() && topK.get() == 0) {
            throw ApiError.invalid("invalid_value", body.path("top_k"), body.path("top_k")
                    + " = 0 leaves no token to sample; use -1 for every token or at least 1");
        }
        return topK.orElse(-1L).intValue();
    }

    private static float additivePenalty(JsonFields body, String name)
    {
        return body.number(name, -SamplingParams.MAX_ADDITIVE_PENALTY, false, SamplingParams.MAX_ADDITIVE_PENALTY).orElse(0.0).floatValue();
    }

    /** {@code seed}, or SGLang's {@code sampling_seed}; both only when they agree. */
    private static long seed(JsonFields body, Spelling spelling)
    {
        Optional<Long> seed = body.integer("seed", Long.MIN_VALUE, Long.MAX_VALUE);
        if (spelling != Spelling.SGLANG) {
            return seed.orElse(0L);
        }
        Optional<Long> samplingSeed = body.integer("sampling_seed", Long.MIN_VALUE, Long.MAX_VALUE);
        if (seed.isPresent() && samplingSeed.isPresent() && !seed.equals(samplingSeed)) {
            throw ApiError.invalid("invalid_value", body.path("sampling_seed"), body.path("sampling_seed") + " = " + samplingSeed.get() + " and "
                    + body.path("seed") + " = " + seed.get() + " disagree; send one of them");
        }
        return seed.or(() -> samplingSeed).orElse(0L);
    }

    static Set<Integer> boxed(int[] ids)
    {
        return Arrays.stream(ids).boxed().collect(Collectors.toUnmodifiableSet());
    }
}
