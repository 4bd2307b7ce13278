package io.handoff.http.fields;

import io.handoff.core.output.LogprobOptions;
import io.handoff.core.scheduler.LogprobRequest;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.JsonFields;

import java.util.Optional;
import java.util.Set;

/** The log-probability fields of each API, read into {@link LogprobOptions}; errors name the field and its range. */
public final class LogprobFields
{
    /** SGLang's top-level fields on {@code /generate}. */
    public static final Set<String> SGLANG = Set.of("return_logprob", "top_logprobs_num", "logprob_start_len", "return_text_in_logprobs",
            "token_ids_logprob");
    /** The most alternatives per position any API takes (OpenAI's chat limit; vLLM and SGLang take as many in completions). */
    public static final int MAX_TOP_N = LogprobRequest.MAX_TOP_N;

    private LogprobFields() {}

    /**
     * SGLang's {@code return_logprob} with {@code top_logprobs_num}, {@code logprob_start_len} (-1, the default: only the
     * prompt's last position, as SGLang reports it) and {@code return_text_in_logprobs}; nothing when not asked for.
     */
    public static Optional<LogprobOptions> sglang(JsonFields body, int promptLength)
    {
        body.onlyNeutral("token_ids_logprob", null, "log probabilities of chosen token ids are not returned");
        int topN = body.integer("top_logprobs_num", 0, MAX_TOP_N).orElse(0L).intValue();
        int start = body.integer("logprob_start_len", -1, promptLength - 1).orElse(-1L).intValue();
        boolean text = body.bool("return_text_in_logprobs").orElse(false);
        if (!body.bool("return_logprob").orElse(false)) {
            return Optional.empty();
        }
        return Optional.of(new LogprobOptions(topN, start == -1 ? promptLength - 1 : start, text));
    }

    /** OpenAI completions' {@code logprobs} (alternatives per position); with {@code echo}, the prompt's come first. */
    public static Optional<LogprobOptions> completions(JsonFields body, boolean echo)
    {
        return body.integer("logprobs", 0, MAX_TOP_N).map(topN -> new LogprobOptions(topN.intValue(), echo ? 0 : -1, true));
    }

    /** OpenAI chat's {@code logprobs} (true or false) and {@code top_logprobs}, which needs it. */
    public static Optional<LogprobOptions> chat(JsonFields body)
    {
        int topN = body.integer("top_logprobs", 0, MAX_TOP_N).orElse(0L).intValue();
        boolean wanted = body.bool("logprobs").orElse(false);
        if (topN > 0 && !wanted) {
            throw ApiError.invalid("invalid_value", body.path("top_logprobs"), body.path("top_logprobs") + " = " + topN
                    + " needs \"logprobs\": true");
        }
        return wanted ? Optional.of(new LogprobOptions(topN, -1, true)) : Optional.empty();
    }
}
