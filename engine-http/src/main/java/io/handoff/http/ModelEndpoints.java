package io.handoff.http;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.HandoffVersion;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.Exchange;
import io.handoff.http.base.HttpRoutes;
import io.handoff.http.base.JsonFields;

import java.io.IOException;
import java.util.Map;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * What a server says about its model: OpenAI's {@code GET /v1/models} and {@code GET /v1/models/{id}} (404
 * {@code model_not_found} for another id), SGLang's {@code GET /get_model_info}, and {@code GET /version}.
 */
public final class ModelEndpoints
{
    public static final String MODELS = "/v1/models";
    public static final String MODEL = "/v1/models/*";

    private final ModelConfig model;
    private final Tokenizer tokenizer;
    private final long created;

    /** @param created when the server started, in seconds since the epoch: the model objects' {@code created} */
    public ModelEndpoints(ModelConfig model, Tokenizer tokenizer, long created)
    {
        this.model = requireNonNull(model, "model is null");
        this.tokenizer = requireNonNull(tokenizer, "tokenizer is null");
        this.created = created;
    }

    public Map<String, HttpRoutes.Route> routes()
    {
        return Map.of(
                MODELS, new HttpRoutes.Route("GET", this::list),
                MODEL, new HttpRoutes.Route("GET", this::one),
                "/get_model_info", new HttpRoutes.Route("GET", this::modelInfo),
                "/version", new HttpRoutes.Route("GET", ModelEndpoints::version));
    }

    /** Refuses a request's {@code model} naming another model than the one {@code served}: 404 {@code model_not_found}. */
    public static void checkServed(Optional<String> requested, String served)
    {
        requested.ifPresent(name -> {
            if (!name.equals(served)) {
                throw ApiError.notFound("model_not_found", "model", "model '" + shown(name) + "' is not served here; this server serves '"
                        + served + "' (GET /v1/models)");
            }
        });
    }

    /** The id of {@code GET /v1/models/{id}}, from the path (an id may hold slashes, as {@code org/name} does). */
    public static String modelId(Exchange exchange)
    {
        return exchange.path().substring(MODELS.length() + 1);
    }

    private void list(Exchange exchange)
            throws IOException
    {
        ObjectNode body = JsonFields.MAPPER.createObjectNode();
        body.put("object", "list");
        body.putArray("data").add(card());
        exchange.sendJson(200, body);
    }

    private void one(Exchange exchange)
            throws IOException
    {
        String id = modelId(exchange);
        if (!id.equals(model.name())) {
            throw ApiError.notFound("model_not_found", "model", "the model '" + shown(id) + "' does not exist; this server serves '"
                    + model.name() + "' (GET /v1/models lists it)");
        }
        exchange.sendJson(200, card());
    }

    private ObjectNode card()
    {
        ObjectNode entry = JsonFields.MAPPER.createObjectNode();
        entry.put("id", model.name());
        entry.put("object", "model");
        entry.put("created", created);
        entry.put("owned_by", "handoff");
        entry.put("root", model.name());
        entry.put("max_model_len", model.maxContext());
        // token-id prompts (e.g. handoff bench serving's) stay valid when every id is below this
        entry.put("vocab_size", model.vocabSize());
        return entry;
    }

    private void modelInfo(Exchange exchange)
            throws IOException
    {
        ObjectNode body = JsonFields.MAPPER.createObjectNode();
        // the model and its tokenizer always come from one place here: a preset's name or a checkpoint's directory name
        body.put("model_path", model.name());
        body.put("tokenizer_path", model.name());
        body.put("served_model_name", model.name());
        body.put("is_generation", true);
        body.put("architecture", model.architecture().name());
        body.put("context_length", model.maxContext());
        body.put("vocab_size", model.vocabSize());
        ArrayNode eos = body.putArray("eos_token_ids");
        tokenizer.eosTokenIds().stream().sorted().forEach(eos::add);
        if (tokenizer.bosTokenId().isPresent()) {
            body.put("bos_token_id", tokenizer.bosTokenId().getAsInt());
        }
        body.put("layers", model.layers());
        body.put("hidden_size", model.hiddenSize());
        exchange.sendJson(200, body);
    }

    private static void version(Exchange exchange)
            throws IOException
    {
        exchange.sendJson(200, JsonFields.MAPPER.createObjectNode().put("version", HandoffVersion.get()));
    }

    /** An id from the path as an error may show it: bounded, since the path is the client's. */
    private static String shown(String id)
    {
        return id.length() > 100 ? id.substring(0, 97) + "..." : id;
    }
}
