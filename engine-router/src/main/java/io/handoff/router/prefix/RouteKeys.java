package io.handoff.router.prefix;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.Arrays;

/**
 * Reads a request's {@link RouteKey} from its body, as far as the router can without a tokenizer: {@code /generate}'s
 * {@code text} or {@code input_ids}, a completion's {@code prompt} (text or ids), a chat's {@code messages} (each
 * role and text content, joined), a response's {@code instructions} and {@code input}. A batch is keyed by its first
 * prompt (all of its prompts go to one prefill). Anything else, or a field of the wrong shape, gives
 * {@link RouteKey#NONE}: the servers, not the router, refuse bad requests.
 */
public final class RouteKeys
{
    private final int limit;

    /** @param limit the most symbols a key keeps (the whole prompt's length is counted still) */
    public RouteKeys(int limit)
    {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1, was " + limit);
        }
        this.limit = limit;
    }

    public RouteKey of(String path, JsonNode body)
    {
        Symbols symbols = switch (path) {
            case "/generate" -> body.has("input_ids") ? ids(first(body.get("input_ids"))) : text(first(body.get("text")));
            case "/v1/completions" -> prompt(first(body.get("prompt")));
            case "/v1/chat/completions" -> messages(body.get("messages"), null);
            case "/v1/responses" -> responseInput(body);
            default -> null;
        };
        if (symbols == null) {
            return RouteKey.NONE;
        }
        return new RouteKey(symbols.key(), symbols.length, maxNewTokens(path, body));
    }

    private static int maxNewTokens(String path, JsonNode body)
    {
        JsonNode given = switch (path) {
            case "/generate" -> body.path("sampling_params").path("max_new_tokens");
            case "/v1/chat/completions" -> body.has("max_completion_tokens") ? body.get("max_completion_tokens") : body.path("max_tokens");
            case "/v1/responses" -> body.path("max_output_tokens");
            default -> body.path("max_tokens");
        };
        return given.canConvertToInt() && given.isIntegralNumber() && given.intValue() >= 0 ? given.intValue() : RouteKey.DEFAULT_MAX_NEW_TOKENS;
    }

    /** A batch's first prompt: the first element of a list of prompts, else the value itself. */
    private static JsonNode first(JsonNode value)
    {
        if (value != null && value.isArray() && !value.isEmpty() && (value.get(0).isArray() || value.get(0).isTextual())) {
            return value.get(0);
        }
        return value;
    }

    private Symbols prompt(JsonNode prompt)
    {
        return prompt != null && prompt.isArray() ? ids(prompt) : text(prompt);
    }

    private Symbols text(JsonNode text)
    {
        if (text == null || !text.isTextual()) {
            return null;
        }
        Symbols symbols = new Symbols(RouteKey.TEXT, limit);
        symbols.append(text.textValue());
        return symbols;
    }

    private Symbols ids(JsonNode ids)
    {
        if (ids == null || !ids.isArray()) {
            return null;
        }
        Symbols symbols = new Symbols(RouteKey.IDS, limit);
        for (JsonNode id : ids) {
            if (!id.canConvertToInt() || !id.isIntegralNumber() || id.intValue() < 0) {
                return null;
            }
            symbols.add(id.intValue());
        }
        return symbols;
    }

    private Symbols responseInput(JsonNode body)
    {
        JsonNode input = body.get("input");
        JsonNode instructions = body.get("instructions");
        if (input != null && input.isTextual()) {
            Symbols symbols = new Symbols(RouteKey.TEXT, limit);
            if (instructions != null && instructions.isTextual()) {
                symbols.append(instructions.textValue()).append("\n");
            }
            return symbols.append(input.textValue());
        }
        return messages(input, instructions);
    }

    /** Each message's role and text, one a line, after {@code instructions} when it is a text. */
    private Symbols messages(JsonNode messages, JsonNode instructions)
    {
        if (messages == null || !messages.isArray()) {
            return null;
        }
        Symbols symbols = new Symbols(RouteKey.TEXT, limit);
        if (instructions != null && instructions.isTextual()) {
            symbols.append(instructions.textValue()).append("\n");
        }
        for (JsonNode message : messages) {
            symbols.append(message.path("role").asText("")).append(": ");
            JsonNode content = message.path("content");
            if (content.isTextual()) {
                symbols.append(content.textValue());
            }
            else if (content.isArray()) {
                for (JsonNode part : content) {
                    symbols.append(part.path("text").asText(""));
                }
            }
            symbols.append("\n");
        }
        return symbols;
    }

    /** A key being read: its first {@code limit} symbols after the kind, and how many there were in all. */
    private static final class Symbols
    {
        private final int[] kept;
        private int size;
        private long length;

        Symbols(int kind, int limit)
        {
            kept = new int[limit + 1];
            kept[size++] = kind;
        }

        void add(int symbol)
        {
            if (size < kept.length) {
                kept[size++] = symbol;
            }
            length++;
        }

        Symbols append(String text)
        {
            int room = Math.min(text.length(), kept.length - size);
            for (int i = 0; i < room; i++) {
                kept[size++] = text.charAt(i);
            }
            length += text.length();
            return this;
        }

        int[] key()
        {
            return Arrays.copyOf(kept, size);
        }
    }
}
