package io.handoff.core.security;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * Checks a same-host peer's claim to be a process, on Linux: the process must hold the other end of the very TCP
 * connection the claim came over. A decode takes a prefill's exit as proof that its one-sided writes stopped
 * (invariant I2), so a pid taken on the peer's word would let a peer name any short-lived process and have pages
 * released while it can still write. Without {@code /proc}, or for a process of another user, the claim is not
 * proven and the caller must not rely on it.
 */
public final class LocalPeer
{
    private static final Path PROC = Path.of("/proc");

    private LocalPeer() {}

    /**
     * Whether process {@code pid} holds the socket whose local address is {@code peerEnd} and whose remote address is
     * {@code ourEnd}: the other end of our connection {@code ourEnd → peerEnd}.
     */
    public static boolean holdsConnection(long pid, InetSocketAddress ourEnd, InetSocketAddress peerEnd)
    {
        requireNonNull(ourEnd, "ourEnd is null");
        requireNonNull(peerEnd, "peerEnd is null");
        if (pid <= 0 || ourEnd.getAddress() == null || peerEnd.getAddress() == null) {
            return false;
        }
        Optional<String> inode = socketInode(peerEnd, ourEnd);
        if (inode.isEmpty()) {
            return false;
        }
        String link = "socket:[" + inode.get() + "]";
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(PROC.resolve(Long.toString(pid)).resolve("fd"))) {
            for (Path fd : fds) {
                try {
                    if (Files.readSymbolicLink(fd).toString().equals(link)) {
                        return true;
                    }
                }
                catch (IOException e) {
                    // closed while we looked
                }
            }
        }
        catch (IOException | SecurityException e) {
            return false;
        }
        return false;
    }

    // the inode of the socket bound to `local` and connected to `remote`, from /proc/net/tcp and tcp6
    private static Optional<String> socketInode(InetSocketAddress local, InetSocketAddress remote)
    {
        for (String table : List.of("tcp", "tcp6")) {
            List<String> lines;
            try {
                lines = Files.readAllLines(PROC.resolve("net").resolve(table));
            }
            catch (IOException | SecurityException e) {
                continue;
            }
            boolean six = table.equals("tcp6");
            String wantLocal = endpoint(local, six);
            String wantRemote = endpoint(remote, six);
            for (String line : lines) {
                String[] fields = line.trim().split("\\s+");
                if (fields.length > 9 && fields[1].equalsIgnoreCase(wantLocal) && fields[2].equalsIgnoreCase(wantRemote)) {
                    return Optional.of(fields[9]);
                }
            }
        }
        return Optional.empty();
    }

    // /proc/net's spelling: the address in 32-bit words of host (little-endian) byte order, ':' and the port in hex
    static String endpoint(InetSocketAddress address, boolean six)
    {
        byte[] bytes = address.getAddress().getAddress();
        if (six && address.getAddress() instanceof Inet4Address) {
            byte[] mapped = new byte[16];
            mapped[10] = (byte) 0xff;
            mapped[11] = (byte) 0xff;
            System.arraycopy(bytes, 0, mapped, 12, 4);
            bytes = mapped;
        }
        else if (!six && !(address.getAddress() instanceof Inet4Address)) {
            bytes = ipv4Of(address.getAddress());
        }
        StringBuilder hex = new StringBuilder();
        for (int word = 0; word < bytes.length; word += 4) {
            for (int i = 3; i >= 0; i--) {
                hex.append(String.format(Locale.ROOT, "%02X", bytes[word + i] & 0xff));
            }
        }
        return hex + ":" + String.format(Locale.ROOT, "%04X", address.getPort());
    }

    // an IPv4-mapped IPv6 address as its IPv4 bytes (a real IPv6 address never matches the IPv4 table)
    private static byte[] ipv4Of(InetAddress address)
    {
        byte[] bytes = address.getAddress();
        boolean mapped = bytes.length == 16 && bytes[10] == (byte) 0xff && bytes[11] == (byte) 0xff;
        for (int i = 0; mapped && i < 10; i++) {
            mapped = bytes[i] == 0;
        }
        return mapped ? new byte[] {bytes[12], bytes[13], bytes[14], bytes[15]} : new byte[] {0, 0, 0, 0};
    }
}
