package io.handoff.core.security;

import io.handoff.core.security.AuthenticationException.Failure;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Arrays;

import static java.util.Objects.requireNonNull;

/**
 * Mutual challenge-response with the {@link ClusterSecret}, run on a fresh connection before anything else is read
 * from it or written to it. Every message has a fixed size, so nothing the peer sends can make this side allocate,
 * and the whole exchange has one deadline, so a silent or slow peer is dropped in time however it trickles.
 * <pre>
 *   opening   initiator → responder  38 bytes: int magic "HOA1", byte version, byte initiator role, 32-byte nonce Ni
 *   challenge responder → initiator  70 bytes: int magic, byte status, byte responder role, 32-byte nonce Nr,
 *                                              32-byte responder proof = HMAC(secret, "responder", purpose, roles, Ni, Nr)
 *   answer    initiator → responder  33 bytes: byte status, 32-byte initiator proof = HMAC(secret, "initiator", purpose, roles, Ni, Nr)
 *   verdict   responder → initiator   1 byte:  status
 * </pre>
 * Each proof covers both nonces and both roles under its own label, so no proof can be replayed on another
 * connection, reflected back at its maker or used for another purpose. The session's two frame keys are derived
 * from the secret and both nonces ({@link Session}). A status other than OK ends the exchange: the peer learns only
 * that byte, never this node's configuration.
 */
public final class ClusterHandshake
{
    /** The first four bytes of an opening: "HOA1". */
    public static final int MAGIC = 0x484F4131;
    static final byte VERSION = 1;
    static final int NONCE_BYTES = 32;
    static final int OPENING_BYTES = 4 + 1 + 1 + NONCE_BYTES;
    static final int CHALLENGE_BYTES = 4 + 1 + 1 + NONCE_BYTES + ClusterSecret.TAG_BYTES;
    static final int ANSWER_BYTES = 1 + ClusterSecret.TAG_BYTES;

    static final byte OK = 0;
    static final byte NO_SECRET = 1;
    static final byte REFUSED = 2;
    static final byte MISMATCH = 3;

    private static final SecureRandom RANDOM = new SecureRandom();

    private ClusterHandshake() {}

    /** Whether the first four bytes a peer sent open this handshake (so a node without a secret can say it has none). */
    public static boolean isOpening(int firstFourBytes)
    {
        return firstFourBytes == MAGIC;
    }

    /**
     * A transfer backend's own connection: this handshake with the backend's own purpose (a proof, and a session's
     * tags, for one backend's connection are worthless on any other channel), the connecting side as the transfer
     * sender and the accepting side as the receiver.
     */
    public static Session transfer(Socket socket, ClusterSecret secret, String backendId, boolean connecting, Duration timeout)
            throws IOException
    {
        String purpose = "transfer " + requireNonNull(backendId, "backendId is null");
        return connecting
                ? initiate(socket, secret, purpose, ClusterRole.TRANSFER_SENDER, ClusterRole.TRANSFER_RECEIVER, timeout)
                : respond(socket, secret, purpose, ClusterRole.TRANSFER_RECEIVER, ClusterRole.TRANSFER_SENDER, timeout);
    }

    /**
     * The connecting side. Returns the session on success; otherwise throws an {@link AuthenticationException} whose
     * message says which side refused what and that the cluster secrets must match.
     */
    public static Session initiate(Socket socket, ClusterSecret secret, String purpose, ClusterRole self, ClusterRole expectedPeer,
            Duration timeout)
            throws IOException
    {
        requireNonNull(secret, "secret is null");
        requireNonNull(purpose, "purpose is null");
        long deadline = deadline(timeout);
        byte[] nonce = nonce();
        OutputStream out = socket.getOutputStream();
        InputStream in = socket.getInputStream();
        out.write(ByteBuffer.allocate(OPENING_BYTES).putInt(MAGIC).put(VERSION).put(self.code()).put(nonce).array());
        out.flush();
        ByteBuffer challenge = ByteBuffer.wrap(readFully(socket, in, CHALLENGE_BYTES, deadline, timeout));
        if (challenge.getInt(0) != MAGIC) {
            throw new AuthenticationException(Failure.NOT_A_HANDSHAKE, "the peer did not answer the cluster authentication handshake "
                    + "(is it a Handoff node of this version?)");
        }
        byte status = challenge.get(4);
        if (status == NO_SECRET) {
            throw new AuthenticationException(Failure.PEER_HAS_NO_SECRET, "the peer has no cluster secret but this node has one: set the "
                    + "same handoff.security.cluster-secret-file on every node of the cluster");
        }
        if (status != OK) {
            throw new AuthenticationException(Failure.REFUSED, "the peer refused cluster authentication of a " + self
                    + " (another Handoff version, or it does not pair with a " + self + ")");
        }
        ClusterRole peer = ClusterRole.of(challenge.get(5));
        byte[] peerNonce = Arrays.copyOfRange(challenge.array(), 6, 6 + NONCE_BYTES);
        byte[] peerProof = Arrays.copyOfRange(challenge.array(), 6 + NONCE_BYTES, CHALLENGE_BYTES);
        boolean peerProven = peer == expectedPeer
                && secret.verify(peerProof, "handoff handshake v1 responder " + purpose, roles(self, expectedPeer), nonce, peerNonce);
        if (!peerProven) {
            answer(out, MISMATCH, new byte[ClusterSecret.TAG_BYTES]);
            if (peer != expectedPeer) {
                throw new AuthenticationException(Failure.REFUSED, "the peer says it is a " + peer + ", not a " + expectedPeer);
            }
            throw new AuthenticationException(Failure.SECRET_MISMATCH, "the peer could not prove it holds this cluster's secret: "
                    + "the cluster secrets differ (compare the fingerprint " + secret.fingerprint() + " logged at startup on both nodes)");
        }
        answer(out, OK, secret.tag("handoff handshake v1 initiator " + purpose, roles(self, expectedPeer), nonce, peerNonce));
        byte verdict = readFully(socket, in, 1, deadline, timeout)[0];
        if (verdict != OK) {
            throw new AuthenticationException(Failure.SECRET_MISMATCH, "the peer refused this node's cluster secret: the cluster secrets "
                    + "differ (compare the fingerprint " + secret.fingerprint() + " logged at startup on both nodes)");
        }
        socket.setSoTimeout(0);
        return Session.derive(secret, purpose, roles(self, expectedPeer), nonce, peerNonce, true);
    }

    /**
     * The accepting side: the peer must open with this handshake as {@code expectedPeer}. Throws an
     * {@link AuthenticationException} when it does not; when it sent something else entirely
     * ({@link Failure#NOT_A_HANDSHAKE}) nothing has been written, so the caller may answer in its own protocol.
     */
    public static Session respond(Socket socket, ClusterSecret secret, String purpose, ClusterRole self, ClusterRole expectedPeer,
            Duration timeout)
            throws IOException
    {
        requireNonNull(secret, "secret is null");
        requireNonNull(purpose, "purpose is null");
        long deadline = deadline(timeout);
        OutputStream out = socket.getOutputStream();
        InputStream in = socket.getInputStream();
        // the magic first: a peer speaking another protocol may never send 38 bytes, and must still hear a refusal now
        ByteBuffer magic = ByteBuffer.wrap(readFully(socket, in, 4, deadline, timeout));
        if (magic.getInt(0) != MAGIC) {
            throw new AuthenticationException(Failure.NOT_A_HANDSHAKE, "the peer did not open the cluster authentication handshake "
                    + "(a node without a cluster secret, or not a Handoff node)", magic.getInt(0));
        }
        ByteBuffer opening = ByteBuffer.wrap(readFully(socket, in, OPENING_BYTES - 4, deadline, timeout));
        ClusterRole peer = ClusterRole.of(opening.get(1));
        if (opening.get(0) != VERSION || peer != expectedPeer) {
            out.write(ByteBuffer.allocate(CHALLENGE_BYTES).putInt(MAGIC).put(REFUSED).array());
            out.flush();
            throw new AuthenticationException(Failure.REFUSED, opening.get(0) != VERSION
                    ? "the peer speaks cluster handshake version " + opening.get(0) + ", this node " + VERSION
                    : "the peer says it is a " + (peer == null ? "role " + opening.get(1) : peer) + ", this node pairs only with a " + expectedPeer);
        }
        byte[] peerNonce = Arrays.copyOfRange(opening.array(), 2, 2 + NONCE_BYTES);
        byte[] nonce = nonce();
        byte[] roles = roles(expectedPeer, self);
        out.write(ByteBuffer.allocate(CHALLENGE_BYTES).putInt(MAGIC).put(OK).put(self.code()).put(nonce)
                .put(secret.tag("handoff handshake v1 responder " + purpose, roles, peerNonce, nonce)).array());
        out.flush();
        byte[] answer = readFully(socket, in, ANSWER_BYTES, deadline, timeout);
        if (answer[0] != OK) {
            throw new AuthenticationException(Failure.SECRET_MISMATCH, "the peer refused this node's proof: the cluster secrets differ "
                    + "(compare the fingerprint " + secret.fingerprint() + " logged at startup on both nodes)");
        }
        boolean proven = secret.verify(Arrays.copyOfRange(answer, 1, ANSWER_BYTES), "handoff handshake v1 initiator " + purpose, roles,
                peerNonce, nonce);
        out.write(proven ? OK : MISMATCH);
        out.flush();
        if (!proven) {
            throw new AuthenticationException(Failure.SECRET_MISMATCH, "the peer's proof does not match this node's cluster secret: "
                    + "the cluster secrets differ, or the peer is not a member of this cluster");
        }
        socket.setSoTimeout(0);
        return Session.derive(secret, purpose, roles, peerNonce, nonce, false);
    }

    /** What a node without a cluster secret answers an opening, so that the peer can say what to configure. */
    public static void answerWithoutSecret(OutputStream out)
            throws IOException
    {
        out.write(ByteBuffer.allocate(CHALLENGE_BYTES).putInt(MAGIC).put(NO_SECRET).array());
        out.flush();
    }

    private static void answer(OutputStream out, byte status, byte[] proof)
            throws IOException
    {
        out.write(ByteBuffer.allocate(ANSWER_BYTES).put(status).put(proof).array());
        out.flush();
    }

    private static byte[] roles(ClusterRole initiator, ClusterRole responder)
    {
        return new byte[] {initiator.code(), responder.code()};
    }

    private static byte[] nonce()
    {
        byte[] nonce = new byte[NONCE_BYTES];
        RANDOM.nextBytes(nonce);
        return nonce;
    }

    private static long deadline(Duration timeout)
    {
        requireNonNull(timeout, "timeout is null");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("handshake timeout must be positive, was " + timeout);
        }
        return System.nanoTime() + timeout.toNanos();
    }

    // exactly n bytes before the deadline: the socket timeout is set to what is left before every read
    private static byte[] readFully(Socket socket, InputStream in, int n, long deadline, Duration timeout)
            throws IOException
    {
        byte[] bytes = new byte[n];
        int read = 0;
        while (read < n) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw incomplete(timeout, null);
            }
            socket.setSoTimeout(Math.toIntExact(Math.max(1, Math.min(Integer.MAX_VALUE, (left + 999_999) / 1_000_000))));
            int got;
            try {
                got = in.read(bytes, read, n - read);
            }
            catch (SocketTimeoutException e) {
                throw incomplete(timeout, e);
            }
            if (got < 0) {
                throw new AuthenticationException(Failure.INCOMPLETE, "the peer closed the connection during cluster authentication "
                        + "(after " + read + " of " + n + " bytes of a handshake message); a peer with another cluster secret, or none, does that");
            }
            read += got;
        }
        return bytes;
    }

    private static AuthenticationException incomplete(Duration timeout, Throwable cause)
    {
        return new AuthenticationException(Failure.INCOMPLETE, "no complete cluster authentication within the handshake timeout of "
                + timeout.toMillis() + " ms", cause);
    }
}
