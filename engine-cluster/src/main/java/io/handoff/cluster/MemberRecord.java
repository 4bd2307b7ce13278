package io.handoff.cluster;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.format.DateTimeParseException;

import static java.util.Objects.requireNonNull;

/**
 * The value of a member's key under the etcd prefix: a JSON object with the member's role, incarnation, HTTP address,
 * compatibility hash, capacity, draining flag and when it registered. The key names the member (prefix + id). Values
 * read back are checked strictly (every field present, of its type and within its bounds); fields this version does
 * not know are ignored, so a newer server's record still reads.
 */
record MemberRecord(Member member, Instant registeredAt)
{
    /** Longest record accepted; a record is a few hundred bytes. */
    static final int MAX_BYTES = 16 << 10;
    private static final int MAX_URL = 2048;

    MemberRecord
    {
        requireNonNull(member, "member is null");
        requireNonNull(registeredAt, "registeredAt is null");
    }

    byte[] toJson()
    {
        ObjectNode node = EtcdClient.MAPPER.createObjectNode()
                .put("role", member.role().label())
                .put("incarnation", member.incarnation())
                .put("http", member.http().toString())
                .put("compatibility", member.compatibility())
                .put("capacity", member.capacity())
                .put("draining", member.draining())
                .put("registered_at", registeredAt.toString());
        return node.toString().getBytes(StandardCharsets.UTF_8);
    }

    /**
     * The record of member {@code id}, or why {@code value} is not one (the caller ignores the key with a warning).
     *
     * @throws IllegalArgumentException naming what is wrong with the value
     */
    static MemberRecord parse(String id, byte[] value)
    {
        requireNonNull(id, "id is null");
        if (value == null) {
            throw new IllegalArgumentException("the value is over " + EtcdClient.MAX_VALUE + " bytes, not read");
        }
        if (value.length > MAX_BYTES) {
            throw new IllegalArgumentException("the value is " + value.length + " bytes, over the limit of " + MAX_BYTES + " for a member record");
        }
        JsonNode node;
        try {
            node = EtcdClient.MAPPER.readTree(value);
        }
        catch (JsonProcessingException e) {
            throw new IllegalArgumentException("the record is not JSON: " + EtcdClient.excerpt(e.getOriginalMessage()));
        }
        catch (IOException e) {
            throw new IllegalArgumentException("the record is not JSON: " + EtcdClient.excerpt(String.valueOf(e.getMessage())));
        }
        if (!(node instanceof ObjectNode)) {
            throw new IllegalArgumentException("the record is not a JSON object");
        }
        String roleLabel = text(node, "role", 16);
        MemberRole role = MemberRole.parse(roleLabel)
                .orElseThrow(() -> new IllegalArgumentException("'role' is '" + EtcdClient.excerpt(roleLabel) + "', expected prefill or decode"));
        URI http;
        try {
            http = new URI(text(node, "http", MAX_URL));
        }
        catch (URISyntaxException e) {
            throw new IllegalArgumentException("'http' is not a URL: " + EtcdClient.excerpt(e.getMessage()));
        }
        JsonNode capacity = field(node, "capacity");
        if (!capacity.isIntegralNumber() || !capacity.canConvertToLong()) {
            throw new IllegalArgumentException("'capacity' is " + EtcdClient.excerpt(capacity.toString()) + ", not an integer");
        }
        JsonNode draining = field(node, "draining");
        if (!draining.isBoolean()) {
            throw new IllegalArgumentException("'draining' is " + EtcdClient.excerpt(draining.toString()) + ", not true or false");
        }
        Instant registeredAt;
        try {
            registeredAt = Instant.parse(text(node, "registered_at", 64));
        }
        catch (DateTimeParseException e) {
            throw new IllegalArgumentException("'registered_at' is not an ISO-8601 instant: " + EtcdClient.excerpt(e.getParsedString()));
        }
        // Member checks the id, incarnation, hash and address, with messages naming the value.
        Member member = new Member(id, role, text(node, "incarnation", Member.MAX_TOKEN), http, text(node, "compatibility", 256), capacity.longValue(),
                draining.booleanValue());
        return new MemberRecord(member, registeredAt);
    }

    private static JsonNode field(JsonNode node, String name)
    {
        JsonNode field = node.get(name);
        if (field == null || field.isNull()) {
            throw new IllegalArgumentException("the record has no '" + name + "'");
        }
        return field;
    }

    private static String text(JsonNode node, String name, int limit)
    {
        JsonNode field = field(node, name);
        if (!field.isTextual()) {
            throw new IllegalArgumentException("'" + name + "' is " + EtcdClient.excerpt(field.toString()) + ", not a string");
        }
        if (field.textValue().length() > limit) {
            throw new IllegalArgumentException("'" + name + "' is " + field.textValue().length() + " characters, over the limit of " + limit);
        }
        return field.textValue();
    }
}
