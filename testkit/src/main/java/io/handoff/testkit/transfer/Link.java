package io.handoff.testkit.transfer;

import io.handoff.spi.PluginSettings;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.spi.transfer.WriteGuard;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static java.util.Objects.requireNonNull;

/**
 * A prefill and a decode backend in one JVM, opened through the provider the way the engine opens them and
 * connected: the sender's source pool holds pattern 0, the receiver's pool the canary. The receiver's pool is a
 * shared file mapping exactly when the backend {@linkplain TransferBackend#wantsSharedFileMemory() wants one}.
 * The sender's hooks and every plan's outcome go to one event list, in the order they happened.
 */
public final class Link
        implements AutoCloseable
{
    public static final String PREFILL_HOST = "prefill-host";
    public static final String DECODE_HOST = "decode-host";

    private final List<String> events = new CopyOnWriteArrayList<>();
    private final RecordingContext senderContext;
    private final TransferBackend receiver;
    private final TransferBackend sender;
    private final Pool destination;
    private final Pool source;
    private final TransferPeer peer;

    private Link(TransferBackendProvider provider, PluginSettings settings, Path folder, WriteGuard guard, boolean oneHost)
    {
        requireNonNull(provider, "provider is null");
        requireNonNull(settings, "settings is null");
        requireNonNull(guard, "guard is null");
        senderContext = new RecordingContext(oneHost ? DECODE_HOST : PREFILL_HOST, folder, events);
        receiver = provider.open(new RecordingContext(DECODE_HOST, folder), settings);
        TransferBackend openedSender = null;
        Pool openedDestination = null;
        Pool openedSource = null;
        try {
            openedSender = provider.open(senderContext, settings);
            openedDestination = (receiver.wantsSharedFileMemory() ? Pool.mapped(folder.resolve("decode-pool")) : Pool.anonymous()).fillCanary();
            openedSource = Pool.anonymous().fill(0);
            byte[] descriptor = receiver.expose(openedDestination.regions(), openedDestination.file(), guard);
            openedSender.registerSources(openedSource.regions());
            peer = openedSender.connect(DECODE_HOST, descriptor);
        }
        catch (RuntimeException | Error e) {
            // Half a link would leak threads, sockets and mappings into the next test.
            closeAll(openedSender, receiver, openedSource, openedDestination);
            throw e;
        }
        sender = openedSender;
        destination = openedDestination;
        source = openedSource;
    }

    /** A sender on another host than the receiver (what a backend that declares REMOTE must serve). */
    public static Link acrossHosts(TransferBackendProvider provider, PluginSettings settings, Path folder, WriteGuard guard)
    {
        return new Link(provider, settings, folder, guard, false);
    }

    /** A sender on the receiver's host (what a SAME_HOST-only backend serves). */
    public static Link onOneHost(TransferBackendProvider provider, PluginSettings settings, Path folder, WriteGuard guard)
    {
        return new Link(provider, settings, folder, guard, true);
    }

    /**
     * Both backends' shared files go to {@code folder}; the receiver admits writes as {@code guard} says.
     *
     * @param oneHost whether the sender's host id is the receiver's
     */
    public static Link open(TransferBackendProvider provider, PluginSettings settings, Path folder, WriteGuard guard, boolean oneHost)
    {
        return new Link(provider, settings, folder, guard, oneHost);
    }

    /** Posts {@code plan} with a new listener that logs its outcome to {@link #events()}. */
    public Outcome post(TransferPlan plan)
    {
        Outcome outcome = new Outcome(events);
        peer.post(plan, outcome);
        return outcome;
    }

    /** The sender's hooks and the outcomes of plans posted with {@link #post}, in order; a test may add its own. */
    public List<String> events()
    {
        return events;
    }

    public RecordingContext senderContext()
    {
        return senderContext;
    }

    public TransferBackend sender()
    {
        return sender;
    }

    public TransferBackend receiver()
    {
        return receiver;
    }

    public Pool source()
    {
        return source;
    }

    public Pool destination()
    {
        return destination;
    }

    public TransferPeer peer()
    {
        return peer;
    }

    @Override
    public void close()
    {
        closeAll(sender, receiver, source, destination);
    }

    private static void closeAll(AutoCloseable... resources)
    {
        RuntimeException failure = null;
        for (AutoCloseable resource : resources) {
            try {
                if (resource != null) {
                    resource.close();
                }
            }
            catch (Exception e) {
                if (failure == null) {
                    failure = new IllegalStateException("closing a link failed", e);
                }
                else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
