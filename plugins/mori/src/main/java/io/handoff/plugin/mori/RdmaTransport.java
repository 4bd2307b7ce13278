package io.handoff.plugin.mori;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.util.Objects.requireNonNull;

/**
 * mori's path between hosts: one-sided RDMA WRITEs through the system's {@code libibverbs}, reached with
 * Java's FFM API and loaded lazily, once. This version stops at the boundary it can test: it probes for
 * devices ({@code ibv_get_device_list}) and reports what it found, but has no RDMA WRITE data path yet,
 * so {@link Probe#usable()} is never true and mori never declares REMOTE. An untested data path would be a
 * promise the core relies on for safety (I1, I2) without proof.
 */
final class RdmaTransport
{
    static final String LIBRARY = "libibverbs.so.1";
    // When a data path exists (and is tested on a machine with a device), this becomes true.
    static final boolean DATA_PATH = false;

    private RdmaTransport() {}

    /**
     * What the probe found: the device names, and when the path cannot be used, why, in words an operator can
     * act on.
     */
    record Probe(List<String> devices, Optional<String> unavailable)
    {
        Probe
        {
            devices = List.copyOf(devices);
            requireNonNull(unavailable, "unavailable is null");
        }

        static Probe failed(String reason)
        {
            return new Probe(List.of(), Optional.of(reason));
        }

        boolean usable()
        {
            return unavailable.isEmpty();
        }

        /** One line for the provider's description and for errors: "available: ..." or "unavailable: <reason>". */
        String summary()
        {
            return unavailable.map(reason -> "unavailable: " + reason).orElse("available: " + String.join(", ", devices));
        }
    }

    /** The probe of {@link #LIBRARY}, run on first use and kept: devices do not come and go under a running engine. */
    static Probe probe()
    {
        return Probed.PROBE;
    }

    private static final class Probed
    {
        static final Probe PROBE = probe(LIBRARY);
    }

    /** Loads {@code library} and lists its devices, or says why not; never throws. */
    static Probe probe(String library)
    {
        requireNonNull(library, "library is null");
        SymbolLookup lookup;
        try {
            lookup = SymbolLookup.libraryLookup(library, Arena.global());
        }
        catch (IllegalArgumentException e) {
            return Probe.failed(library + " not found: install rdma-core (Debian/Ubuntu: apt-get install libibverbs1) for RDMA; "
                    + "mori uses shared memory only");
        }
        catch (IllegalCallerException e) {
            return Probe.failed("native access is not enabled for module handoff.plugin.mori (start Handoff with bin/handoff, or add "
                    + "--enable-native-access=handoff.plugin.mori); mori uses shared memory only");
        }
        try {
            return listDevices(library, lookup);
        }
        catch (Throwable e) {
            return Probe.failed("probing " + library + " failed: " + e + "; mori uses shared memory only");
        }
    }

    private static Probe listDevices(String library, SymbolLookup lookup)
            throws Throwable
    {
        Optional<MemorySegment> getList = lookup.find("ibv_get_device_list");
        Optional<MemorySegment> freeList = lookup.find("ibv_free_device_list");
        Optional<MemorySegment> getName = lookup.find("ibv_get_device_name");
        if (getList.isEmpty() || freeList.isEmpty() || getName.isEmpty()) {
            return Probe.failed(library + " lacks ibv_get_device_list, ibv_free_device_list or ibv_get_device_name: it is not libibverbs");
        }
        Linker linker = Linker.nativeLinker();
        // struct ibv_device **ibv_get_device_list(int *num_devices); errno says why it returned NULL.
        Linker.Option errno = Linker.Option.captureCallState("errno");
        MethodHandle list = linker.downcallHandle(getList.get(), FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS), errno);
        MethodHandle free = linker.downcallHandle(freeList.get(), FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
        MethodHandle name = linker.downcallHandle(getName.get(), FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS));
        VarHandle errnoValue = Linker.Option.captureStateLayout().varHandle(groupElement("errno"));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(Linker.Option.captureStateLayout());
            MemorySegment count = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment devices = (MemorySegment) list.invokeExact(state, count);
            if (devices.equals(MemorySegment.NULL)) {
                int error = (int) errnoValue.get(state, 0L);
                return Probe.failed("Failed to get IB devices list (ibv_get_device_list: errno " + error + ", " + strerror(linker, error)
                        + "); no RDMA driver is loaded, mori uses shared memory only");
            }
            try {
                int n = count.get(ValueLayout.JAVA_INT, 0);
                MemorySegment array = devices.reinterpret((long) n * ValueLayout.ADDRESS.byteSize());
                List<String> names = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    MemorySegment device = array.getAtIndex(ValueLayout.ADDRESS, i);
                    MemorySegment deviceName = (MemorySegment) name.invokeExact(device);
                    names.add(deviceName.equals(MemorySegment.NULL) ? "device" + i : deviceName.reinterpret(256).getString(0));
                }
                if (names.isEmpty()) {
                    return Probe.failed("no RDMA device (ibv_get_device_list found 0); mori uses shared memory only");
                }
                if (!DATA_PATH) {
                    return new Probe(names, Optional.of("found " + String.join(", ", names)
                            + ", but this version of mori has no RDMA WRITE data path; it uses shared memory only"));
                }
                return new Probe(names, Optional.empty());
            }
            finally {
                free.invokeExact(devices);
            }
        }
    }

    private static String strerror(Linker linker, int error)
    {
        try {
            Optional<MemorySegment> strerror = linker.defaultLookup().find("strerror");
            if (strerror.isEmpty()) {
                return "unknown error";
            }
            MethodHandle handle = linker.downcallHandle(strerror.get(), FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
            MemorySegment text = (MemorySegment) handle.invokeExact(error);
            return text.equals(MemorySegment.NULL) ? "unknown error" : text.reinterpret(256).getString(0);
        }
        catch (Throwable e) {
            return "unknown error";
        }
    }
}
