package io.handoff.cluster;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * One open watch of a key prefix: the gateway's stream of newline-delimited JSON messages, read one bounded message at
 * a time. Tracks the revision it has seen up to; a watch etcd cancels because its start revision was compacted away
 * ends with {@link Compacted}, any other end of the stream with an {@link IOException}.
 */
final class EtcdWatch
        implements AutoCloseable
{
    /** A put (with the key's new value) or a delete of one key. */
    record Event(boolean delete, EtcdClient.KeyValue kv)
    {
        Event
        {
            requireNonNull(kv, "kv is null");
        }
    }

    /** etcd compacted its history past the revision the watch started at: the caller must read the prefix again. */
    static final class Compacted
            extends IOException
    {
        Compacted(String message)
        {
            super(message);
        }
    }

    private final String endpoint;
    private final InputStream stream;
    private final String prefix;
    private long revision;

    EtcdWatch(String endpoint, InputStream stream, String prefix, long startRevision)
    {
        this.endpoint = requireNonNull(endpoint, "endpoint is null");
        this.stream = new BufferedInputStream(requireNonNull(stream, "stream is null"));
        this.prefix = requireNonNull(prefix, "prefix is null");
        this.revision = startRevision - 1;
    }

    /** The last revision this watch has seen (its start revision - 1 before any event). */
    long revision()
    {
        return revision;
    }

    /** Blocks until etcd sends events, and returns them in order (never empty). */
    List<Event> next()
            throws IOException
    {
        while (true) {
            JsonNode message = message();
            JsonNode error = message.get("error");
            if (error != null) {
                throw new IOException("etcd at " + endpoint + " ended the watch of " + prefix + " with an error: " + EtcdClient.excerpt(error.toString()));
            }
            JsonNode result = message.get("result");
            if (!(result instanceof ObjectNode)) {
                throw malformed("a watch message without a result object", message);
            }
            long compacted = EtcdClient.number(endpoint, result.get("compact_revision"), "compact_revision");
            if (result.path("canceled").asBoolean(false)) {
                if (compacted > 0) {
                    throw new Compacted("etcd at " + endpoint + " compacted its history to revision " + compacted + ", past the watch's revision " + (revision + 1));
                }
                throw new IOException("etcd at " + endpoint + " canceled the watch of " + prefix + ": " + EtcdClient.excerpt(result.path("cancel_reason").asText("no reason given")));
            }
            List<Event> events = events(result, message);
            if (!events.isEmpty()) {
                return events;
            }
        }
    }

    @Override
    public void close()
    {
        try {
            stream.close();
        }
        catch (IOException e) {
            // closing is best effort: the watch is abandoned either way
        }
    }

    private List<Event> events(JsonNode result, JsonNode message)
            throws IOException
    {
        JsonNode events = result.get("events");
        if (events == null) {
            return List.of();
        }
        if (!events.isArray()) {
            throw malformed("'events' that is not an array", message);
        }
        List<Event> batch = new ArrayList<>();
        for (JsonNode event : events) {
            String type = event.path("type").asText("PUT");
            if (!type.equals("PUT") && !type.equals("DELETE")) {
                throw malformed("an event of type '" + EtcdClient.excerpt(type) + "'", message);
            }
            boolean delete = type.equals("DELETE");
            EtcdClient.KeyValue kv = EtcdClient.keyValue(endpoint, event.get("kv"), prefix, !delete);
            // Events of one transaction share a revision; an event before what was already seen is not etcd's.
            if (kv.modRevision() < revision || kv.modRevision() <= 0) {
                throw malformed("an event at revision " + kv.modRevision() + ", before the revision already seen, " + revision, message);
            }
            revision = kv.modRevision();
            batch.add(new Event(delete, kv));
        }
        return batch;
    }

    /** The next message: one line of at most {@link EtcdClient#MAX_ANSWER} bytes, a JSON object. */
    private JsonNode message()
            throws IOException
    {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        while (true) {
            int b = stream.read();
            if (b < 0) {
                throw new IOException("the watch stream from etcd at " + endpoint + " ended");
            }
            if (b == '\n') {
                if (line.size() == 0) {
                    continue;
                }
                break;
            }
            if (line.size() >= EtcdClient.MAX_ANSWER) {
                throw new IOException("etcd at " + endpoint + " sent a watch message over " + EtcdClient.MAX_ANSWER + " bytes; refused");
            }
            line.write(b);
        }
        JsonNode node;
        try {
            node = EtcdClient.MAPPER.readTree(line.toByteArray());
        }
        catch (JsonProcessingException e) {
            throw new IOException("etcd at " + endpoint + " sent a watch message that is not JSON: " + EtcdClient.excerpt(e.getOriginalMessage()));
        }
        if (!(node instanceof ObjectNode)) {
            throw new IOException("etcd at " + endpoint + " sent a watch message that is not a JSON object: " + EtcdClient.excerpt(String.valueOf(node)));
        }
        return node;
    }

    private IOException malformed(String what, JsonNode message)
    {
        return new IOException("etcd at " + endpoint + " sent " + what + ": " + EtcdClient.excerpt(message.toString()));
    }
}
