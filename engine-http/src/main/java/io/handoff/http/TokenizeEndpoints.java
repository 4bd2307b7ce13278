package io.handoff.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.Exchange;
import io.handoff.http.base.HttpRoutes;
import io.handoff.http.base.JsonFields;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * SGLang's {@code POST /tokenize} and {@code POST /detokenize} (also at {@code /v1/tokenize}, {@code /v1/detokenize}),
 * with the model's own tokenizer. {@code /tokenize} takes {@code prompt} (SGLang's and vLLM's name) or {@code text}, a
 * string or a list of strings, and answers {@code tokens}, {@code count} and {@code max_model_len} (lists for a list);
 * {@code /detokenize} takes {@code tokens}, a list of ids or a list of such lists, every id inside the vocabulary, and
 * answers {@code text}. The body limit bounds how much either may be sent.
 */
final class TokenizeEndpoints
{
    // how many texts or id lists one request may hold: a batch, not a corpus
    static final int MAX_ITEMS = 256;
    private static final Set<String> TOKENIZE_FIELDS = Set.of("model", "prompt", "text", "add_special_tokens");
    private static final Set<String> DETOKENIZE_FIELDS = Set.of("model", "tokens", "skip_special_tokens");

    private final ModelConfig model;
    private final Tokenizer tokenizer;

    TokenizeEndpoints(ModelConfig model, Tokenizer tokenizer)
    {
        this.model = requireNonNull(model, "model is null");
        this.tokenizer = requireNonNull(tokenizer, "tokenizer is null");
    }

    Map<String, HttpRoutes.Route> routes()
    {
        return Map.of(
                "/tokenize", new HttpRoutes.Route("POST", this::tokenize),
                "/v1/tokenize", new HttpRoutes.Route("POST", this::tokenize),
                "/detokenize", new HttpRoutes.Route("POST", this::detokenize),
                "/v1/detokenize", new HttpRoutes.Route("POST", this::detokenize));
    }

    private void tokenize(Exchange exchange)
            throws IOException
    {
        JsonFields body = exchange.json();
        body.allowOnly(TOKENIZE_FIELDS);
        checkModel(body);
        if (body.has("prompt") == body.has("text")) {
            throw ApiError.invalid(body.has("prompt") ? "conflicting_fields" : "missing_field", "prompt",
                    "give the text to tokenize in exactly one of 'prompt' or 'text' (a string or a list of strings)");
        }
        String field = body.has("prompt") ? "prompt" : "text";
        JsonNode value = body.raw(field).orElseThrow();
        boolean addSpecialTokens = body.bool("add_special_tokens").orElse(true);
        ObjectNode response = JsonFields.MAPPER.createObjectNode();
        if (value.isTextual()) {
            int[] ids = tokenizer.encode(value.textValue(), addSpecialTokens);
            ArrayNode tokens = response.putArray("tokens");
            for (int id : ids) {
                tokens.add(id);
            }
            response.put("count", ids.length);
        }
        else {
            List<String> texts = texts(field, value);
            ArrayNode tokens = response.putArray("tokens");
            ArrayNode counts = response.putArray("count");
            for (String text : texts) {
                int[] ids = tokenizer.encode(text, addSpecialTokens);
                ArrayNode list = tokens.addArray();
                for (int id : ids) {
                    list.add(id);
                }
                counts.add(ids.length);
            }
        }
        response.put("max_model_len", model.maxContext());
        exchange.sendJson(200, response);
    }

    private static List<String> texts(String field, JsonNode value)
    {
        if (!value.isArray() || value.isEmpty()) {
            throw ApiError.invalid("invalid_type", field, field + " must be a string or a non-empty list of strings, got " + JsonFields.describe(value));
        }
        if (value.size() > MAX_ITEMS) {
            throw ApiError.invalid("invalid_value", field, field + " holds " + value.size() + " texts; send at most " + MAX_ITEMS + " per request");
        }
        List<String> texts = new ArrayList<>();
        for (int i = 0; i < value.size(); i++) {
            if (!value.get(i).isTextual()) {
                throw ApiError.invalid("invalid_type", field, field + "[" + i + "] must be a string, got " + JsonFields.describe(value.get(i)));
            }
            texts.add(value.get(i).textValue());
        }
        return texts;
    }

    private void detokenize(Exchange exchange)
            throws IOException
    {
        JsonFields body = exchange.json();
        body.allowOnly(DETOKENIZE_FIELDS);
        checkModel(body);
        // special tokens have no text here (Tokenizer#tokenBytes): only skipping them is possible
        body.onlyNeutral("skip_special_tokens", JsonFields.MAPPER.getNodeFactory().booleanNode(true), "special tokens have no text to show");
        JsonNode value = body.raw("tokens").orElseThrow(() -> ApiError.invalid("missing_field", "tokens",
                "'tokens' is required: a list of token ids, or a list of such lists"));
        if (!value.isArray()) {
            throw ApiError.invalid("invalid_type", "tokens", "tokens must be a list of token ids or a list of such lists, got " + JsonFields.describe(value));
        }
        ObjectNode response = JsonFields.MAPPER.createObjectNode();
        if (value.isEmpty() || !value.get(0).isArray()) {
            response.put("text", tokenizer.decode(JsonFields.intArray("tokens", value, 0, model.vocabSize())));
        }
        else {
            if (value.size() > MAX_ITEMS) {
                throw ApiError.invalid("invalid_value", "tokens", "tokens holds " + value.size() + " lists; send at most " + MAX_ITEMS + " per request");
            }
            ArrayNode texts = response.putArray("text");
            for (int i = 0; i < value.size(); i++) {
                JsonNode list = value.get(i);
                if (!list.isArray()) {
                    throw ApiError.invalid("invalid_type", "tokens", "tokens[" + i + "] must be a list of token ids like tokens[0], got "
                            + JsonFields.describe(list));
                }
                texts.add(tokenizer.decode(JsonFields.intArray("tokens[" + i + "]", list, 0, model.vocabSize())));
            }
        }
        exchange.sendJson(200, response);
    }

    private void checkModel(JsonFields body)
    {
        ModelEndpoints.checkServed(body.string("model"), model.name());
    }
}
