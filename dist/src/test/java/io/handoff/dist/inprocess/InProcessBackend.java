package io.handoff.dist.inprocess;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.PlanWork;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferFailure;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.spi.transfer.WriteGuard;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

/** See {@link InProcessProvider}. Receivers are found by a token in this JVM; nothing crosses a process. */
final class InProcessBackend
        implements TransferBackend
{
    private static final Map<String, List<MemoryRegion>> RECEIVERS = new ConcurrentHashMap<>();

    private final Behaviour behaviour;
    private final String connectionCapabilities;
    private List<MemoryRegion> sources = List.of();
    private String token;

    InProcessBackend(Behaviour behaviour, String connectionCapabilities)
    {
        this.behaviour = behaviour;
        this.connectionCapabilities = connectionCapabilities;
    }

    @Override
    public byte[] expose(List<MemoryRegion> regions, Path sharedFile, WriteGuard guard)
    {
        if (token == null) {
            token = UUID.randomUUID().toString();
            RECEIVERS.put(token, List.copyOf(regions));
        }
        return (token + "\n" + connectionCapabilities).getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void registerSources(List<MemoryRegion> regions)
    {
        sources = List.copyOf(regions);
    }

    @Override
    public TransferPeer connect(String peerHostId, byte[] descriptor)
    {
        String[] parts = new String(descriptor, StandardCharsets.UTF_8).split("\n", 2);
        List<MemoryRegion> destinations = RECEIVERS.get(parts[0]);
        if (destinations == null) {
            throw new IllegalArgumentException("no receiver '" + parts[0] + "' in this JVM");
        }
        Set<TransferCapability> reported = parts.length < 2 || parts[1].isBlank() ? EnumSet.noneOf(TransferCapability.class)
                : Arrays.stream(parts[1].split(",")).map(String::strip).map(TransferCapability::valueOf)
                        .collect(Collectors.toCollection(() -> EnumSet.noneOf(TransferCapability.class)));
        return new Peer(destinations, reported);
    }

    @Override
    public void close()
    {
        if (token != null) {
            RECEIVERS.remove(token);
        }
    }

    private final class Peer
            implements TransferPeer
    {
        private final List<MemoryRegion> destinations;
        private final Set<TransferCapability> capabilities;

        Peer(List<MemoryRegion> destinations, Set<TransferCapability> capabilities)
        {
            this.destinations = destinations;
            this.capabilities = capabilities;
        }

        @Override
        public String transport()
        {
            return "in-process";
        }

        @Override
        public PageGeometry receiverGeometry()
        {
            return PageGeometry.of(destinations);
        }

        @Override
        public Set<TransferCapability> capabilities()
        {
            return capabilities;
        }

        @Override
        public void send(PlanWork work)
        {
            try {
                switch (behaviour) {
                    case HONEST, REPORTS_TWICE, NEVER_REPORTS -> {
                        work.awaitFence();
                        long bytes = copy(work);
                        if (behaviour != Behaviour.NEVER_REPORTS) {
                            work.completed(bytes);
                        }
                        if (behaviour == Behaviour.REPORTS_TWICE) {
                            work.completed(bytes);
                        }
                    }
                    case COPIES_BEFORE_FENCE -> {
                        long bytes = copy(work);
                        work.awaitFence();
                        work.completed(bytes);
                    }
                    case SKIPS_FENCE -> work.completed(copy(work));
                    case READS_BEFORE_FENCE -> {
                        work.reading();
                        work.completed(copy(work));
                    }
                }
            }
            catch (TransferFailure failure) {
                work.failed(failure);
            }
        }

        private long copy(PlanWork work)
        {
            TransferPlan plan = work.plan();
            long bytes = 0;
            int pageIndex = plan.firstPageIndex();
            for (int run = 0; run < plan.runs(); run++) {
                for (int i = 0; i < plan.runLengths()[run]; i++) {
                    for (int r = 0; r < sources.size(); r++) {
                        MemorySegment from = sources.get(r).page(plan.srcPages()[run] + i);
                        destinations.get(r).page(plan.dstPages()[run] + i).copyFrom(from);
                        bytes += from.byteSize();
                    }
                    work.pageDone(pageIndex++);
                }
            }
            return bytes;
        }

        @Override
        public void close()
        {
        }
    }
}
