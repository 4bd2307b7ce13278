package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.spi.transfer.WriteGuard;
import io.handoff.testkit.transfer.Link;
import io.handoff.testkit.transfer.ReferenceSettings;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static io.handoff.testkit.transfer.Plans.pagesOf;
import static io.handoff.testkit.transfer.Plans.plan;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * UCX's own transports authenticate nobody, so nixl gives UCX loopback as its only network device unless the operator
 * opted in ({@code allow-unauthenticated-network}) on a cluster whose listeners may face the network (a secret): none
 * of the TCP sockets UCX listens on in this process faces the network then, and transfers between processes of one
 * host still work. A secret alone does not widen it; the opt-in without a secret does not either.
 */
class LoopbackOnlyTest
{
    private static final Map<String, String> TCP = Map.of("tls", "tcp");
    private static final Map<String, String> OPTED_IN = Map.of("tls", "tcp", "allow-unauthenticated-network", "true");

    @TempDir
    Path folder;

    @BeforeEach
    void needsUcx()
    {
        Ucx.assumeAvailable();
    }

    @Test
    void withoutASecretUcxListensOnLoopbackOnlyAndStillTransfers()
            throws Exception
    {
        Set<String> before = listeningSockets();
        NixlProvider provider = new NixlProvider();
        try (Link link = Link.open(provider, ReferenceSettings.of(provider).with(TCP), folder, WriteGuard.ALLOW_ALL, false, Link.TIMEOUTS,
                Link.Wiring.LOOPBACK_ONLY)) {
            TransferPlan moved = plan(new RoomKey(7, 1), 0, 0, ProducerFence.DONE, new int[] {0, 8, 4});
            assertThat(link.post(moved).await().completed()).isTrue();
            assertThat(link.destination().mismatches(pagesOf(moved))).isEmpty();

            List<String> opened = listeningSockets().stream().filter(socket -> !before.contains(socket)).toList();
            assertThat(opened).as("UCX's listening sockets").isNotEmpty().allSatisfy(socket -> assertThat(socket).startsWith("loopback "));
        }
    }

    @Test
    void aSecretAloneKeepsUcxOnLoopback()
            throws Exception
    {
        assertThat(listenersOf(TCP, Link.Wiring.AUTHENTICATED)).as("UCX's listening sockets")
                .isNotEmpty().allSatisfy(socket -> assertThat(socket).startsWith("loopback "));
    }

    @Test
    void theOptInWithoutASecretKeepsUcxOnLoopback()
            throws Exception
    {
        assertThat(listenersOf(OPTED_IN, Link.Wiring.LOOPBACK_ONLY)).as("UCX's listening sockets")
                .isNotEmpty().allSatisfy(socket -> assertThat(socket).startsWith("loopback "));
    }

    @Test
    void theOptInWithASecretLetsUcxUseTheNetwork()
            throws Exception
    {
        assumeTrue(hasNonLoopbackAddress(), "this machine has no network interface but loopback");
        assertThat(listenersOf(OPTED_IN, Link.Wiring.AUTHENTICATED)).anySatisfy(socket -> assertThat(socket).startsWith("network "));
    }

    /** The TCP sockets UCX listens on for a link opened with these settings and wiring, while the link is open. */
    private List<String> listenersOf(Map<String, String> settings, Link.Wiring wiring)
            throws Exception
    {
        Set<String> before = listeningSockets();
        NixlProvider provider = new NixlProvider();
        try (Link link = Link.open(provider, ReferenceSettings.of(provider).with(settings), folder, WriteGuard.ALLOW_ALL, false, Link.TIMEOUTS,
                wiring)) {
            return listeningSockets().stream().filter(socket -> !before.contains(socket)).toList();
        }
    }

    /** This process's listening TCP sockets, as "loopback|network INODE", from /proc (sockets of this process only). */
    private static Set<String> listeningSockets()
            throws IOException
    {
        Set<String> inodes = new HashSet<>();
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
            for (Path fd : fds) {
                try {
                    String target = Files.readSymbolicLink(fd).toString();
                    if (target.startsWith("socket:[")) {
                        inodes.add(target.substring(8, target.length() - 1));
                    }
                }
                catch (IOException closedMeanwhile) {
                    // the fd of the directory stream itself, or one closed since
                }
            }
        }
        Set<String> listening = new HashSet<>();
        for (String table : new String[] {"/proc/self/net/tcp", "/proc/self/net/tcp6"}) {
            Path path = Path.of(table);
            if (!Files.exists(path)) {
                continue;
            }
            List<String> lines = Files.readAllLines(path);
            for (String line : lines.subList(1, lines.size())) {
                String[] fields = line.trim().split("\\s+");
                // local_address is fields[1] (hex address:port), st fields[3] (0A = LISTEN), inode fields[9]
                if (fields.length > 9 && fields[3].equals("0A") && inodes.contains(fields[9])) {
                    listening.add((isLoopback(fields[1].split(":")[0]) ? "loopback " : "network ") + fields[9]);
                }
            }
        }
        return listening;
    }

    /** A /proc/net/tcp address: 8 hex digits, little-endian IPv4, or 32 for IPv6 (four little-endian words). */
    private static boolean isLoopback(String hex)
    {
        byte[] address = new byte[hex.length() / 2];
        for (int word = 0; word < address.length / 4; word++) {
            for (int i = 0; i < 4; i++) {
                address[word * 4 + i] = (byte) Integer.parseInt(hex.substring(word * 8 + (3 - i) * 2, word * 8 + (3 - i) * 2 + 2), 16);
            }
        }
        try {
            InetAddress parsed = InetAddress.getByAddress(address);
            return parsed.isLoopbackAddress() || (address.length == 16 && isMappedLoopback(address));
        }
        catch (IOException e) {
            throw new IllegalStateException("unreadable address " + hex, e);
        }
    }

    private static boolean isMappedLoopback(byte[] address)
    {
        for (int i = 0; i < 10; i++) {
            if (address[i] != 0) {
                return false;
            }
        }
        return (address[10] & 0xFF) == 0xFF && (address[11] & 0xFF) == 0xFF && address[12] == 127;
    }

    private static boolean hasNonLoopbackAddress()
            throws SocketException
    {
        return NetworkInterface.networkInterfaces()
                .filter(nic -> {
                    try {
                        return nic.isUp() && !nic.isLoopback();
                    }
                    catch (SocketException e) {
                        return false;
                    }
                })
                .anyMatch(nic -> nic.inetAddresses().findAny().isPresent());
    }
}
