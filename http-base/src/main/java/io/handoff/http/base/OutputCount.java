package io.handoff.http.base;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import static java.util.Objects.requireNonNull;

/**
 * How many generations one request body asks for: its prompts (a batch or one) times the outputs per prompt
 * ({@code n}, or OpenAI's {@code best_of} when it asks for more candidates than it returns). The servers and the
 * router both count with this, so the block of rooms a router reserves for a request is the one its servers use:
 * generation {@code i} (prompt-major: prompt {@code i / perPrompt}, its output {@code i % perPrompt}) runs in room
 * {@code bootstrap_room + i}.
 *
 * @param prompts how many prompts; 1 when the prompt is not a list of prompts
 * @param batched whether the prompts came as a list (a list answer, even of one)
 * @param returned outputs returned per prompt ({@code n})
 * @param perPrompt outputs generated per prompt: {@code n}, or {@code best_of} when larger
 */
public record OutputCount(int prompts, boolean batched, int returned, int perPrompt)
{
    /** The most generations one request may ask for (prompts × outputs per prompt). */
    public static final int MAX_OUTPUTS = 64;

    public OutputCount
    {
        if (prompts < 1 || returned < 1 || perPrompt < returned) {
            throw new IllegalArgumentException("bad output count: " + prompts + " prompt(s), " + returned + " returned of " + perPrompt);
        }
    }

    /** Every generation of the request. */
    public int total()
    {
        return prompts * perPrompt;
    }

    /** Whether this is one generation answered as one object (no list, no index). */
    public boolean single()
    {
        return total() == 1 && !batched;
    }

    /**
     * Counts the generations of a request to {@code path} ({@code /generate}, {@code /v1/completions} or
     * {@code /v1/chat/completions}); a malformed count or more than {@link #MAX_OUTPUTS} is a 400 naming the field.
     * Only the shape is read here; each API checks the prompts themselves.
     */
    public static OutputCount of(String path, ObjectNode body)
    {
        requireNonNull(path, "path is null");
        requireNonNull(body, "body is null");
        OutputCount count = switch (path) {
            case "/generate" -> generate(body);
            case "/v1/completions" -> completions(body);
            case "/v1/chat/completions" -> new OutputCount(1, false, n(body.get("n"), "n"), n(body.get("n"), "n"));
            default -> new OutputCount(1, false, 1, 1);
        };
        if (count.total() > MAX_OUTPUTS) {
            String field = count.prompts() > 1 && count.perPrompt() == 1 ? promptField(path, body)
                    : count.perPrompt() > count.returned() ? "best_of" : path.equals("/generate") ? "sampling_params.n" : "n";
            throw ApiError.invalid("too_many_outputs", field, "the request asks for " + count.prompts() + " prompt(s) × " + count.perPrompt()
                    + " output(s) = " + count.total() + " generations; one request may ask for at most " + MAX_OUTPUTS
                    + ": split it into several requests");
        }
        return count;
    }

    private static OutputCount generate(ObjectNode body)
    {
        JsonNode text = present(body.get("text"));
        JsonNode ids = present(body.get("input_ids"));
        boolean batched = text != null ? text.isArray() : ids != null && ids.isArray() && !ids.isEmpty() && ids.get(0).isArray();
        int prompts = batched ? (text != null ? text : ids).size() : 1;
        if (batched && prompts == 0) {
            throw ApiError.invalid("invalid_value", text != null ? "text" : "input_ids", "the list of prompts is empty; send at least one");
        }
        JsonNode sampling = present(body.get("sampling_params"));
        int n = n(sampling instanceof ObjectNode object ? object.get("n") : null, "sampling_params.n");
        return new OutputCount(prompts, batched, n, n);
    }

    private static OutputCount completions(ObjectNode body)
    {
        JsonNode prompt = present(body.get("prompt"));
        boolean batched = prompt != null && prompt.isArray() && !prompt.isEmpty() && (prompt.get(0).isTextual() || prompt.get(0).isArray());
        int n = n(body.get("n"), "n");
        int bestOf = present(body.get("best_of")) == null ? n : count(body.get("best_of"), "best_of");
        if (bestOf < n) {
            throw ApiError.invalid("invalid_value", "best_of", "best_of (" + bestOf + ") must be at least n (" + n + "): it is how many"
                    + " completions are generated per prompt, of which the n best are returned");
        }
        return new OutputCount(batched ? prompt.size() : 1, batched, n, bestOf);
    }

    private static String promptField(String path, ObjectNode body)
    {
        return path.equals("/v1/completions") ? "prompt" : present(body.get("text")) != null ? "text" : "input_ids";
    }

    private static int n(JsonNode value, String field)
    {
        return present(value) == null ? 1 : count(value, field);
    }

    private static int count(JsonNode value, String field)
    {
        if (!JsonFields.isInteger(value)) {
            throw ApiError.invalid("invalid_type", field, field + " must be an integer, got " + JsonFields.describe(value));
        }
        if (value.longValue() < 1 || value.longValue() > MAX_OUTPUTS) {
            throw ApiError.invalid("invalid_value", field, field + " must be in 1.." + MAX_OUTPUTS + ", got " + value);
        }
        return value.intValue();
    }

    private static JsonNode present(JsonNode value)
    {
        return value == null || value.isNull() ? null : value;
    }
}
