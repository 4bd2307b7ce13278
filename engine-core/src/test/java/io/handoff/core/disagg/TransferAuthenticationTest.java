package io.handoff.core.disagg;

import io.handoff.core.disagg.control.ControlSecurity;
import io.handoff.core.disagg.peer.EngineTransferContext;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.security.ClusterSecret;
import io.handoff.core.security.ClusterSecurity;
import io.handoff.core.security.RunDirectory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

import static io.handoff.core.disagg.ClusterPeers.OTHER;
import static io.handoff.core.disagg.ClusterPeers.SECRET;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What the core offers a backend for its own connections ({@link EngineTransferContext}): the same handshake, and the same listen rule. */
class TransferAuthenticationTest
{
    @TempDir
    Path base;
    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void close()
            throws Exception
    {
        for (AutoCloseable closeable : open.reversed()) {
            closeable.close();
        }
    }

    private EngineTransferContext context(ClusterSecurity settings)
    {
        RunDirectory run = RunDirectory.create(base);
        open.add(run);
        return new EngineTransferContext(FaultInjector.NONE, run, ControlSecurity.of(settings), "mooncake");
    }

    /** Runs the accepting side's authentication on a connection the sending side authenticates; returns the accepting side's outcome. */
    private CompletableFuture<Void> connect(EngineTransferContext sender, EngineTransferContext receiver)
            throws Exception
    {
        ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        open.add(server);
        Socket connecting = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort());
        Socket accepted = server.accept();
        open.add(connecting);
        open.add(accepted);
        CompletableFuture<Void> accepting = CompletableFuture.runAsync(() -> {
            try {
                receiver.authenticate(accepted, false);
            }
            catch (IOException e) {
                throw new CompletionException(e);
            }
        });
        try {
            sender.authenticate(connecting, true);
        }
        catch (IOException e) {
            accepting.exceptionally(ignored -> null).get(20, TimeUnit.SECONDS);
            throw e;
        }
        return accepting;
    }

    @Test
    void aBackendsConnectionAuthenticatesWithTheSameSecretAndFailsClearlyWithAnother()
            throws Exception
    {
        EngineTransferContext receiver = context(ClusterSecurity.withSecret(SECRET));

        connect(context(ClusterSecurity.withSecret(SECRET)), receiver).get(20, TimeUnit.SECONDS);
        assertThatThrownBy(() -> connect(context(ClusterSecurity.withSecret(OTHER)), receiver))
                .hasMessageContaining("cluster authentication of the mooncake connection failed").hasMessageContaining("cluster secrets differ");
    }

    @Test
    void withoutASecretNothingIsExchangedAndOnlyLoopbackMayBeBound()
            throws Exception
    {
        EngineTransferContext insecure = context(ClusterSecurity.loopbackOnly());
        connect(insecure, insecure).get(20, TimeUnit.SECONDS);

        insecure.checkListen(InetAddress.getLoopbackAddress());
        assertThatThrownBy(() -> insecure.checkListen(InetAddress.getByName("0.0.0.0"))).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("transfer backend 'mooncake' would listen on 0.0.0.0")
                .hasMessageContaining("handoff.security.cluster-secret-file").hasMessageContaining("allow-insecure-remote");
        context(ClusterSecurity.withSecret(SECRET)).checkListen(InetAddress.getByName("0.0.0.0"));
    }
}
