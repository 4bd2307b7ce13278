package io.handoff.bench.transfer;

import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.runtime.Engine;
import io.handoff.core.transfer.RankLayout;
import io.handoff.spi.transfer.MemoryRegion;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * The receiving half of {@code bench transfer}, started by it as a child process: opens the configured backend as a
 * decode does, exposes a pool of the payload's shape, prints the descriptor, and hashes its pool when asked (see
 * {@link ReceiverProtocol}). Not for people: hidden from the help.
 */
@Command(name = "transfer-receiver", hidden = true, description = "The receiver process of bench transfer.")
public final class TransferReceiverCommand
        implements Callable<Integer>
{
    @Mixin
    ConfigOptions config;

    @Option(names = "--bytes", required = true)
    long bytes;

    @Option(names = "--page-bytes", required = true)
    long pageBytes;

    @Option(names = "--layers", required = true)
    int layers;

    /** The head-sliced pattern: the sender's tensor-parallel ranks and this receiver's; 1 and 1 for region by region. */
    @Option(names = "--sender-ranks", defaultValue = "1")
    int senderRanks;

    @Option(names = "--receiver-ranks", defaultValue = "1")
    int receiverRanks;

    /** Flips one byte of the pool before hashing it: how a test shows that corrupted data fails the bench. */
    @Option(names = "--flip-byte-for-testing", hidden = true)
    boolean flipByte;

    @Override
    public Integer call()
            throws Exception
    {
        PayloadShape shape = new PayloadShape(bytes, pageBytes, layers, senderRanks, receiverRanks);
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        try (Engine engine = Engine.start(config.source(Map.of()));
                StandaloneTransfer receiver = StandaloneTransfer.open(Disaggregation.Role.DECODE, engine.config(), engine.security(), engine.plugins(),
                        shape.geometry(receiverRanks), shape.pages(), receiverRanks)) {
            out.println(ReceiverProtocol.DESCRIPTOR + Base64.getEncoder().encodeToString(receiver.expose()));
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            // until the sender closes our stdin (or is gone)
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (line.equals(ReceiverProtocol.ASK_CHECKSUMS)) {
                    if (flipByte) {
                        MemoryRegion region = receiver.regions().getFirst();
                        long offset = region.pageStride() * (region.pages() / 2);
                        region.segment().set(ValueLayout.JAVA_BYTE, offset, (byte) ~region.segment().get(ValueLayout.JAVA_BYTE, offset));
                    }
                    out.println(ReceiverProtocol.CHECKSUMS + (shape.sliced()
                            ? PoolPattern.pageChecksums(RankLayout.of(receiverRanks, PayloadShape.KV_HEADS, false, PayloadShape.PAGE_TOKENS,
                                    receiver.regions()), receiver.regions(), shape.pages())
                            : PoolPattern.checksums(receiver.regions())));
                }
            }
        }
        return 0;
    }
}
