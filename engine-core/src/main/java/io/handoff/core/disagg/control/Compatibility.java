package io.handoff.core.disagg.control;

import io.handoff.core.kv.KvGeometry;
import io.handoff.spi.attention.AttentionArithmetic;
import io.handoff.spi.attention.KvLayout;
import io.handoff.trace.PeerText;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * What a prefill and a decode must agree on before any page moves: the same model and weights (or the
 * decode would continue another model's KV), the same KV layout, dtype and page size (or a page means
 * different bytes on each side), and the same protocol. Checked at the handshake, so a mismatch is
 * refused with both values named instead of being discovered as garbage tokens.
 *
 * @param weightsHash anything that identifies the weights: a seed for generated weights, a checkpoint digest
 * @param kvLayout the layout and shape of a page's rows, e.g. {@code "MLA 2 layers, key row 576, value row 512"}: the whole
 *         model's rows, whichever ranks hold them
 * @param tensorRanks the tensor-parallel ranks the server's KV is spread over: not a condition of pairing (a prefill of one
 *         layout hands off to a decode of another, head slice by head slice), but what the prefill plans its transfers by
 */
public record Compatibility(String modelName, String weightsHash, String kvLayout, String kvDtype, int pageSize, int protocolVersion,
        int tensorRanks)
{
    public static final int MAX_FIELD_CHARS = 1000;

    public Compatibility
    {
        // a field may come from the network and end up in a log line or a refusal
        modelName = PeerText.printable(modelName);
        weightsHash = PeerText.printable(weightsHash);
        kvLayout = PeerText.printable(kvLayout);
        kvDtype = PeerText.printable(kvDtype);
        checkField(modelName, "modelName");
        checkField(weightsHash, "weightsHash");
        checkField(kvLayout, "kvLayout");
        checkField(kvDtype, "kvDtype");
        if (pageSize < 1) {
            throw new IllegalArgumentException("page size must be >= 1, was " + pageSize);
        }
        if (tensorRanks < 1 || tensorRanks > 64) {
            throw new IllegalArgumentException("tensor ranks must be in 1..64, was " + tensorRanks);
        }
    }

    public Compatibility(String modelName, String weightsHash, String kvLayout, String kvDtype, int pageSize, int protocolVersion)
    {
        this(modelName, weightsHash, kvLayout, kvDtype, pageSize, protocolVersion, 1);
    }

    /** This engine's side, from its model and KV pool geometry, at the current protocol version, attention in F32. */
    public static Compatibility of(String modelName, String weightsHash, KvLayout layout, KvGeometry geometry)
    {
        return of(modelName, weightsHash, layout, geometry, AttentionArithmetic.F32);
    }

    /**
     * The same with attention's arithmetic, which changes what a prefill writes into later layers' KV: one other than F32 is
     * named in the layout, so peers that attend differently are refused.
     */
    public static Compatibility of(String modelName, String weightsHash, KvLayout layout, KvGeometry geometry, AttentionArithmetic arithmetic)
    {
        return of(modelName, weightsHash, layout, geometry, arithmetic, 1);
    }

    /**
     * The same for a server of {@code tensorRanks} tensor-parallel ranks; {@code geometry} is the whole model's (one rank's
     * holds only its heads), so that servers of any layouts of the same model agree.
     */
    public static Compatibility of(String modelName, String weightsHash, KvLayout layout, KvGeometry geometry, AttentionArithmetic arithmetic,
            int tensorRanks)
    {
        requireNonNull(layout, "layout is null");
        requireNonNull(geometry, "geometry is null");
        String kvLayout = layout + " " + geometry.layers() + " layers, key row " + geometry.keyRowElements() + ", value row "
                + geometry.valueRowElements() + (geometry.valuesInKeyRow() ? " (in key row)" : "")
                + (arithmetic == AttentionArithmetic.F32 ? "" : ", attention " + arithmetic);
        return new Compatibility(modelName, weightsHash, kvLayout, geometry.dtype().name(), geometry.pageSize(), ControlMessage.PROTOCOL_VERSION,
                tensorRanks);
    }

    /** A short digest of every field but {@link #tensorRanks}; equal hashes mean compatible peers. */
    public String hash()
    {
        String canonical = String.join("\u0000", modelName, weightsHash, kvLayout, kvDtype, Integer.toString(pageSize), Integer.toString(protocolVersion));
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(canonical.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest, 0, 16);
        }
        catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    /** Empty when {@code peer} is compatible; otherwise every differing field with this side's and the peer's value. */
    public Optional<String> mismatch(Compatibility peer)
    {
        requireNonNull(peer, "peer is null");
        List<String> differences = new ArrayList<>();
        compare(differences, "model", modelName, peer.modelName);
        compare(differences, "weights", weightsHash, peer.weightsHash);
        compare(differences, "KV layout", kvLayout, peer.kvLayout);
        compare(differences, "KV dtype", kvDtype, peer.kvDtype);
        compare(differences, "page size", Integer.toString(pageSize), Integer.toString(peer.pageSize));
        compare(differences, "protocol version", Integer.toString(protocolVersion), Integer.toString(peer.protocolVersion));
        if (differences.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of("incompatible peer: " + String.join("; ", differences)
                + ". Prefill and decode must serve the same model and weights with the same KV layout, dtype and page size.");
    }

    /**
     * The answer to a peer's hello: accepted when it speaks this protocol version, has the expected role
     * and is compatible; otherwise refused with a reason that names both values.
     */
    public ControlMessage.HelloResult judge(ControlMessage.Hello peer, ControlMessage.Role expectedRole)
    {
        requireNonNull(peer, "peer is null");
        requireNonNull(expectedRole, "expectedRole is null");
        if (peer.protocolVersion() != ControlMessage.PROTOCOL_VERSION) {
            return ControlMessage.HelloResult.refused("protocol version is " + ControlMessage.PROTOCOL_VERSION + " here but "
                    + peer.protocolVersion() + " on peer " + peer.hostId() + ": run the same Handoff version on both sides");
        }
        if (peer.role() != expectedRole) {
            return ControlMessage.HelloResult.refused("peer " + peer.hostId() + " is a " + peer.role() + ", expected a " + expectedRole);
        }
        return mismatch(peer.compatibility())
                .map(reason -> ControlMessage.HelloResult.refused(reason + " (peer " + peer.hostId() + ")"))
                .orElse(ControlMessage.HelloResult.ACCEPTED);
    }

    private static void compare(List<String> differences, String field, String here, String peer)
    {
        if (!here.equals(peer)) {
            differences.add(field + " is '" + here + "' here but '" + peer + "' on the peer");
        }
    }

    private static void checkField(String value, String name)
    {
        requireNonNull(value, name + " is null");
        if (value.length() > MAX_FIELD_CHARS) {
            throw new IllegalArgumentException(name + " is longer than " + MAX_FIELD_CHARS + " characters");
        }
    }
}
