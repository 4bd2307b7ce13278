package io.handoff.plugin.nixl;

import io.handoff.spi.PluginSettings;

import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.WriteGuard;
import io.handoff.testkit.transfer.Pool;
import io.handoff.testkit.transfer.RecordingContext;
import io.handoff.testkit.transfer.ReferenceSettings;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The decode side of {@link CrossProcessTest}, in its own JVM: exposes a canary-filled pool over the UCX transports
 * named by its argument and prints the descriptor; on "check src:dst ..." it says whether exactly those pages
 * (pattern 0) landed, and on end of input it closes.
 */
public final class ReceiverProcess
{
    /** Marks this process's replies; UCX may print its own lines to the same stdout. */
    static final String REPLY = "@@ ";

    private ReceiverProcess() {}

    public static void main(String[] args)
            throws Exception
    {
        PluginSettings settings = ReferenceSettings.of(new NixlProvider()).with("tls", args[0]);
        try (Pool pool = Pool.anonymous().fillCanary()) {
            TransferBackend receiver = new NixlProvider().open(new RecordingContext("decode-process", Path.of(System.getProperty("java.io.tmpdir"))), settings);
            try {
                byte[] descriptor = receiver.expose(pool.regions(), null, WriteGuard.ALLOW_ALL);
                System.out.println(REPLY + "descriptor " + Base64.getEncoder().encodeToString(descriptor));
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                for (String line; (line = in.readLine()) != null; ) {
                    Map<Integer, Integer> pages = new HashMap<>();
                    for (String pair : line.substring("check ".length()).split(" ")) {
                        String[] parts = pair.split(":");
                        pages.put(Integer.parseInt(parts[1]), Integer.parseInt(parts[0]));
                    }
                    List<String> mismatches = pool.mismatches(0, pages);
                    System.out.println(REPLY + (mismatches.isEmpty() ? "landed" : "mismatches " + mismatches));
                }
            }
            finally {
                receiver.close();
            }
        }
    }
}
