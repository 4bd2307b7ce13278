package io.handoff.core.security;

import io.handoff.core.security.AuthenticationException.Failure;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Both ends of the handshake over real loopback sockets; each side's outcome is awaited, never slept for. */
class ClusterHandshakeTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static final ClusterSecret SECRET = ClusterSecret.of("the cluster's secret, 32 bytes!!".getBytes());
    private static final ClusterSecret OTHER = ClusterSecret.of("another cluster's secret, 32 b!!".getBytes());

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void close()
            throws Exception
    {
        for (AutoCloseable closeable : open.reversed()) {
            closeable.close();
        }
    }

    /** A connected pair: [0] the initiator's socket, [1] the responder's. */
    private Socket[] pair()
            throws IOException
    {
        ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        open.add(server);
        Socket initiator = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort());
        Socket responder = server.accept();
        open.add(initiator);
        open.add(responder);
        return new Socket[] {initiator, responder};
    }

    private static CompletableFuture<Session> respond(Socket socket, ClusterSecret secret, Duration timeout)
    {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return ClusterHandshake.respond(socket, secret, "control", ClusterRole.PREFILL, ClusterRole.DECODE, timeout);
            }
            catch (IOException e) {
                throw new CompletionException(e);
            }
        });
    }

    private static Throwable failureOf(CompletableFuture<?> future)
            throws Exception
    {
        try {
            future.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        }
        catch (ExecutionException e) {
            Throwable cause = e.getCause();
            return cause instanceof CompletionException && cause.getCause() != null ? cause.getCause() : cause;
        }
        throw new AssertionError("the handshake succeeded");
    }

    @Test
    void theSameSecretAuthenticatesBothSidesAndTheirSessionsAgree()
            throws Exception
    {
        Socket[] pair = pair();
        CompletableFuture<Session> responder = respond(pair[1], SECRET, TIMEOUT);

        Session initiator = ClusterHandshake.initiate(pair[0], SECRET, "control", ClusterRole.DECODE, ClusterRole.PREFILL, TIMEOUT);
        Session accepted = responder.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);

        byte[] frame = {7, 1, 2, 3};
        assertThat(accepted.receiving().verify(frame, frame.length, initiator.sending().tag(frame, frame.length))).isTrue();
        assertThat(initiator.receiving().verify(frame, frame.length, accepted.sending().tag(frame, frame.length))).isTrue();
    }

    @Test
    void aWrongSecretFailsOnBothSidesNamingTheClusterSecret()
            throws Exception
    {
        Socket[] pair = pair();
        CompletableFuture<Session> responder = respond(pair[1], SECRET, TIMEOUT);

        assertThatThrownBy(() -> ClusterHandshake.initiate(pair[0], OTHER, "control", ClusterRole.DECODE, ClusterRole.PREFILL, TIMEOUT))
                .isInstanceOfSatisfying(AuthenticationException.class, e -> assertThat(e.failure()).isEqualTo(Failure.SECRET_MISMATCH))
                .hasMessageContaining("cluster secrets differ");
        Throwable refused = failureOf(responder);
        assertThat(refused).isInstanceOfSatisfying(AuthenticationException.class, e -> assertThat(e.failure()).isEqualTo(Failure.SECRET_MISMATCH))
                .hasMessageContaining("cluster secrets differ");
    }

    @Test
    void aProofForAnotherPurposeOrRoleIsWorthless()
            throws Exception
    {
        Socket[] pair = pair();
        CompletableFuture<Session> responder = respond(pair[1], SECRET, TIMEOUT);

        // the same secret, but a transfer connection's proof on the control endpoint
        assertThatThrownBy(() -> ClusterHandshake.initiate(pair[0], SECRET, "mooncake-tcp", ClusterRole.DECODE, ClusterRole.PREFILL, TIMEOUT))
                .isInstanceOf(AuthenticationException.class);
        assertThat(failureOf(responder)).isInstanceOf(AuthenticationException.class);

        Socket[] second = pair();
        CompletableFuture<Session> prefill = respond(second[1], SECRET, TIMEOUT);
        assertThatThrownBy(() -> ClusterHandshake.initiate(second[0], SECRET, "control", ClusterRole.ROUTER, ClusterRole.PREFILL, TIMEOUT))
                .isInstanceOfSatisfying(AuthenticationException.class, e -> assertThat(e.failure()).isEqualTo(Failure.REFUSED));
        assertThat(failureOf(prefill)).hasMessageContaining("says it is a ROUTER");
    }

    @Test
    void aPeerWithoutASecretIsToldApartFromAWrongOne()
            throws Exception
    {
        Socket[] pair = pair();
        CompletableFuture<Session> responder = respond(pair[1], SECRET, TIMEOUT);
        // a node without a secret speaks its protocol at once: a 4-byte length, then a frame
        pair[0].getOutputStream().write(new byte[] {0, 0, 0, 9, 11, 0, 0, 0, 0, 0, 0, 0, 1});

        assertThat(failureOf(responder)).isInstanceOfSatisfying(AuthenticationException.class,
                e -> assertThat(e.failure()).isEqualTo(Failure.NOT_A_HANDSHAKE));

        Socket[] second = pair();
        CompletableFuture<Void> noSecret = CompletableFuture.runAsync(() -> {
            try {
                second[1].getInputStream().readNBytes(4);
                ClusterHandshake.answerWithoutSecret(second[1].getOutputStream());
            }
            catch (IOException e) {
                throw new CompletionException(e);
            }
        });
        assertThatThrownBy(() -> ClusterHandshake.initiate(second[0], SECRET, "control", ClusterRole.DECODE, ClusterRole.PREFILL, TIMEOUT))
                .isInstanceOfSatisfying(AuthenticationException.class, e -> assertThat(e.failure()).isEqualTo(Failure.PEER_HAS_NO_SECRET))
                .hasMessageContaining("handoff.security.cluster-secret-file");
        noSecret.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    }

    @Test
    void aSilentOrTricklingPeerIsDroppedAtTheDeadline()
            throws Exception
    {
        Duration short_ = Duration.ofMillis(300);
        Socket[] pair = pair();
        CompletableFuture<Session> responder = respond(pair[1], SECRET, short_);
        // two of the magic's four bytes, then nothing
        pair[0].getOutputStream().write(new byte[] {0x48, 0x4F});

        assertThat(failureOf(responder)).isInstanceOfSatisfying(AuthenticationException.class,
                e -> assertThat(e.failure()).isEqualTo(Failure.INCOMPLETE)).hasMessageContaining("300 ms");
        InputStream in = pair[0].getInputStream();
        assertThat(in.available()).as("nothing was told to the silent peer").isZero();
    }

    @Test
    void aFrameReplayedOrTakenOutOfOrderFailsItsTag()
            throws Exception
    {
        Socket[] pair = pair();
        CompletableFuture<Session> responder = respond(pair[1], SECRET, TIMEOUT);
        Session sender = ClusterHandshake.initiate(pair[0], SECRET, "control", ClusterRole.DECODE, ClusterRole.PREFILL, TIMEOUT);
        Session receiver = responder.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        byte[] first = {1, 1};
        byte[] second = {2, 2};
        byte[] firstTag = sender.sending().tag(first, 2);
        byte[] secondTag = sender.sending().tag(second, 2);

        assertThat(receiver.receiving().verify(second, 2, secondTag)).as("the second frame first").isFalse();

        Socket[] again = pair();
        CompletableFuture<Session> responder2 = respond(again[1], SECRET, TIMEOUT);
        ClusterHandshake.initiate(again[0], SECRET, "control", ClusterRole.DECODE, ClusterRole.PREFILL, TIMEOUT);
        Session otherConnection = responder2.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        assertThat(otherConnection.receiving().verify(first, 2, firstTag)).as("replayed on another connection").isFalse();
    }
}
