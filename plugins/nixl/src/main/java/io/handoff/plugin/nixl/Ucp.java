package io.handoff.plugin.nixl;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import static io.handoff.plugin.nixl.UcpStructs.EP_ADDRESS;
import static io.handoff.plugin.nixl.UcpStructs.EP_ERR_MODE;
import static io.handoff.plugin.nixl.UcpStructs.EP_FIELD_MASK;
import static io.handoff.plugin.nixl.UcpStructs.EP_PARAMS;
import static io.handoff.plugin.nixl.UcpStructs.MEM_MAP_ADDRESS;
import static io.handoff.plugin.nixl.UcpStructs.MEM_MAP_FIELD_MASK;
import static io.handoff.plugin.nixl.UcpStructs.MEM_MAP_LENGTH;
import static io.handoff.plugin.nixl.UcpStructs.MEM_MAP_PARAMS;
import static io.handoff.plugin.nixl.UcpStructs.PARAMS;
import static io.handoff.plugin.nixl.UcpStructs.PARAMS_FEATURES;
import static io.handoff.plugin.nixl.UcpStructs.PARAMS_FIELD_MASK;
import static io.handoff.plugin.nixl.UcpStructs.PARAMS_MT_WORKERS_SHARED;
import static io.handoff.plugin.nixl.UcpStructs.POLLFD;
import static io.handoff.plugin.nixl.UcpStructs.POLLFD_EVENTS;
import static io.handoff.plugin.nixl.UcpStructs.POLLFD_FD;
import static io.handoff.plugin.nixl.UcpStructs.POLLIN;
import static io.handoff.plugin.nixl.UcpStructs.UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
import static io.handoff.plugin.nixl.UcpStructs.UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
import static io.handoff.plugin.nixl.UcpStructs.UCP_ERR_HANDLING_MODE_NONE;
import static io.handoff.plugin.nixl.UcpStructs.UCP_FEATURE_RMA;
import static io.handoff.plugin.nixl.UcpStructs.UCP_FEATURE_WAKEUP;
import static io.handoff.plugin.nixl.UcpStructs.UCP_MEM_MAP_PARAM_FIELD_ADDRESS;
import static io.handoff.plugin.nixl.UcpStructs.UCP_MEM_MAP_PARAM_FIELD_LENGTH;
import static io.handoff.plugin.nixl.UcpStructs.UCP_PARAM_FIELD_FEATURES;
import static io.handoff.plugin.nixl.UcpStructs.UCP_PARAM_FIELD_MT_WORKERS_SHARED;
import static io.handoff.plugin.nixl.UcpStructs.UCP_WORKER_PARAM_FIELD_THREAD_MODE;
import static io.handoff.plugin.nixl.UcpStructs.UCS_ERR_LAST;
import static io.handoff.plugin.nixl.UcpStructs.UCS_OK;
import static io.handoff.plugin.nixl.UcpStructs.UCS_THREAD_MODE_SERIALIZED;
import static io.handoff.plugin.nixl.UcpStructs.WORKER_FIELD_MASK;
import static io.handoff.plugin.nixl.UcpStructs.WORKER_PARAMS;
import static io.handoff.plugin.nixl.UcpStructs.WORKER_THREAD_MODE;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * The part of libucp the nixl backend uses, bound through FFM: exactly these functions, no callbacks (requests are
 * polled, so nothing upcalls into Java). Handles ({@code ucp_context_h}, {@code ucp_worker_h}, ...) are zero-length
 * segments; a failed call throws {@link UcxException} with UCX's own words. Loaded once per library name.
 */
final class Ucp
{
    /** The API version passed to {@code ucp_init_version} ({@code ucp_init} is an inline wrapper of it): the headers the layouts come from. */
    private static final int API_MAJOR = 1;
    private static final int API_MINOR = 13;

    private static final Map<String, Ucp> LOADED = new ConcurrentHashMap<>();

    private final String library;
    private final MethodHandle configRead;
    private final MethodHandle configModify;
    private final MethodHandle configRelease;
    private final MethodHandle initVersion;
    private final MethodHandle cleanup;
    private final MethodHandle workerCreate;
    private final MethodHandle workerDestroy;
    private final MethodHandle workerGetAddress;
    private final MethodHandle workerReleaseAddress;
    private final MethodHandle workerProgress;
    private final MethodHandle workerGetEfd;
    private final MethodHandle workerArm;
    private final MethodHandle workerSignal;
    private final MethodHandle epCreate;
    private final MethodHandle epCloseNbx;
    private final MethodHandle epFlushNbx;
    private final MethodHandle memMap;
    private final MethodHandle memUnmap;
    private final MethodHandle rkeyPack;
    private final MethodHandle rkeyBufferRelease;
    private final MethodHandle epRkeyUnpack;
    private final MethodHandle rkeyDestroy;
    private final MethodHandle putNbx;
    private final MethodHandle requestCheckStatus;
    private final MethodHandle requestFree;
    private final MethodHandle statusString;
    private final MethodHandle poll;

    private Ucp(String library, SymbolLookup ucp)
    {
        this.library = library;
        Linker linker = Linker.nativeLinker();
        // ucs_status_t is a packed enum: one signed byte (ucs/type/status.h).
        configRead = bind(linker, ucp, "ucp_config_read", FunctionDescriptor.of(JAVA_BYTE, ADDRESS, ADDRESS, ADDRESS));
        configModify = bind(linker, ucp, "ucp_config_modify", FunctionDescriptor.of(JAVA_BYTE, ADDRESS, ADDRESS, ADDRESS));
        configRelease = bind(linker, ucp, "ucp_config_release", FunctionDescriptor.ofVoid(ADDRESS));
        initVersion = bind(linker, ucp, "ucp_init_version", FunctionDescriptor.of(JAVA_BYTE, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        cleanup = bind(linker, ucp, "ucp_cleanup", FunctionDescriptor.ofVoid(ADDRESS));
        workerCreate = bind(linker, ucp, "ucp_worker_create", FunctionDescriptor.of(JAVA_BYTE, ADDRESS, ADDRESS, ADDRESS));
        workerDestroy = bind(linker, ucp, "ucp_worker_destroy", FunctionDescriptor.ofVoid(ADDRESS));
        workerGetAddress = bind(linker, ucp, "ucp_worker_get_address", FunctionDescriptor.of(JAVA_BYTE, ADDRESS, ADDRESS, ADDRESS));
        workerReleaseAddress = bind(linker, ucp, "ucp_worker_release_address", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
        workerProgress = bind(linker, ucp, "ucp_worker_progress", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        workerGetEfd = bind(linker, ucp, "ucp_worker_get_efd", FunctionDescriptor.of(JAVA_BYTE, ADDRESS, ADDRESS));
        workerArm = bind(linker, ucp, "ucp_worker_arm", FunctionDescriptor.of(JAVA_BYTE, ADDRESS));
        workerSignal = bind(linker, ucp, "ucp_worker_signal", FunctionDescriptor.of(JAVA_BYTE, ADDRESS));
        epCreate = bind(linker, ucp, "ucp_ep_create", FunctionDescriptor.of(JAVA_BYTE, ADDRESS, ADDRESS, ADDRESS));
        epCloseNbx = bind(linker, ucp, "ucp_ep_close_nbx", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        epFlushNbx = bind(linker, ucp, "ucp_ep_flush_nbx", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        memMap = bind(linker, ucp, "ucp_mem_map", FunctionDescriptor.of(JAVA_BYTE, ADDRESS, ADDRESS, ADDRESS));
        memUnmap = bind(linker, ucp, "ucp_mem_unmap", FunctionDescriptor.of(JAVA_BYTE, ADDRESS, ADDRESS));
        rkeyPack = bind(linker, ucp, "ucp_rkey_pack", FunctionDescriptor.of(JAVA_BYTE, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
        rkeyBufferRelease = bind(linker, ucp, "ucp_rkey_buffer_release", FunctionDescriptor.ofVoid(ADDRESS));
        epRkeyUnpack = bind(linker, ucp, "ucp_ep_rkey_unpack", FunctionDescriptor.of(JAVA_BYTE, ADDRESS, ADDRESS, ADDRESS));
        rkeyDestroy = bind(linker, ucp, "ucp_rkey_destroy", FunctionDescriptor.ofVoid(ADDRESS));
        putNbx = bind(linker, ucp, "ucp_put_nbx", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS));
        requestCheckStatus = bind(linker, ucp, "ucp_request_check_status", FunctionDescriptor.of(JAVA_BYTE, ADDRESS));
        requestFree = bind(linker, ucp, "ucp_request_free", FunctionDescriptor.ofVoid(ADDRESS));
        // libucs is a dependency of libucp, so the library's lookup (dlsym on its handle) finds it too.
        statusString = bind(linker, ucp, "ucs_status_string", FunctionDescriptor.of(ADDRESS, JAVA_BYTE));
        poll = bind(linker, linker.defaultLookup(), "poll", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    }

    /**
     * The bound library. Call only after {@link UcxLibrary#probe} accepted it: loading libucs with UCX's signal
     * handlers armed would kill the JVM.
     */
    static Ucp load(String library)
    {
        return LOADED.computeIfAbsent(library, name -> new Ucp(name, SymbolLookup.libraryLookup(name, Arena.global())));
    }

    String library()
    {
        return library;
    }

    /**
     * A context for one-sided puts (RMA) with wakeup (workers can sleep on an event fd), shareable by workers on
     * several threads. {@code tls} is UCX_TLS for this context alone; empty keeps UCX's choice (or the
     * environment's UCX_TLS).
     */
    /**
     * @param tls UCX_TLS for this context, or empty for UCX's choice
     * @param netDevices UCX_NET_DEVICES for this context (e.g. {@code lo}), or empty for UCX's choice
     */
    MemorySegment createContext(String tls, String netDevices)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment configOut = arena.allocate(ADDRESS);
            check("ucp_config_read", (byte) configRead.invokeExact(MemorySegment.NULL, MemorySegment.NULL, configOut));
            MemorySegment config = configOut.get(ADDRESS, 0);
            try {
                if (!tls.isEmpty()) {
                    check("ucp_config_modify(TLS=" + tls + ")",
                            (byte) configModify.invokeExact(config, arena.allocateFrom("TLS"), arena.allocateFrom(tls)));
                }
                if (!netDevices.isEmpty()) {
                    check("ucp_config_modify(NET_DEVICES=" + netDevices + ")",
                            (byte) configModify.invokeExact(config, arena.allocateFrom("NET_DEVICES"), arena.allocateFrom(netDevices)));
                }
                MemorySegment params = arena.allocate(PARAMS);
                params.set(JAVA_LONG, PARAMS_FIELD_MASK, UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED);
                params.set(JAVA_LONG, PARAMS_FEATURES, UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP);
                params.set(JAVA_INT, PARAMS_MT_WORKERS_SHARED, 1);
                MemorySegment contextOut = arena.allocate(ADDRESS);
                check("ucp_init (UCX_TLS=" + (tls.isEmpty() ? "<default>" : tls) + ")",
                        (byte) initVersion.invokeExact(API_MAJOR, API_MINOR, params, config, contextOut));
                return contextOut.get(ADDRESS, 0);
            }
            finally {
                configRelease.invokeExact(config);
            }
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    void cleanup(MemorySegment context)
    {
        try {
            cleanup.invokeExact(context);
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    /** A worker used by one thread at a time (serialized), handed from the creating thread to its owner. */
    MemorySegment createWorker(MemorySegment context)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = arena.allocate(WORKER_PARAMS);
            params.set(JAVA_LONG, WORKER_FIELD_MASK, UCP_WORKER_PARAM_FIELD_THREAD_MODE);
            params.set(JAVA_INT, WORKER_THREAD_MODE, UCS_THREAD_MODE_SERIALIZED);
            MemorySegment out = arena.allocate(ADDRESS);
            check("ucp_worker_create", (byte) workerCreate.invokeExact(context, params, out));
            return out.get(ADDRESS, 0);
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    void destroyWorker(MemorySegment worker)
    {
        try {
            workerDestroy.invokeExact(worker);
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    /** The worker's address, copied out (UCX's buffer is released at once). */
    byte[] workerAddress(MemorySegment worker)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment addressOut = arena.allocate(ADDRESS);
            MemorySegment lengthOut = arena.allocate(JAVA_LONG);
            check("ucp_worker_get_address", (byte) workerGetAddress.invokeExact(worker, addressOut, lengthOut));
            MemorySegment address = addressOut.get(ADDRESS, 0);
            try {
                return address.reinterpret(lengthOut.get(JAVA_LONG, 0)).toArray(JAVA_BYTE);
            }
            finally {
                workerReleaseAddress.invokeExact(worker, address);
            }
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    /** Polls the worker once; returns how many events it handled. */
    int progress(MemorySegment worker)
    {
        try {
            return (int) workerProgress.invokeExact(worker);
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    int eventFd(MemorySegment worker)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            check("ucp_worker_get_efd", (byte) workerGetEfd.invokeExact(worker, out));
            return out.get(JAVA_INT, 0);
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    /** Arms the worker's event fd; returns UCS_OK, or UCS_ERR_BUSY when events are pending (progress again). */
    int arm(MemorySegment worker)
    {
        try {
            return (byte) workerArm.invokeExact(worker);
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    /** Wakes a thread sleeping on the worker's event fd; safe from any thread (ucp.h). */
    void signal(MemorySegment worker)
    {
        try {
            check("ucp_worker_signal", (byte) workerSignal.invokeExact(worker));
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    /** Sleeps until {@code fd} is readable or {@code timeoutMillis} passed; {@code pollfd} is an 8-byte scratch segment. */
    void awaitReadable(MemorySegment pollfd, int fd, int timeoutMillis)
    {
        pollfd.set(JAVA_INT, POLLFD_FD, fd);
        pollfd.set(JAVA_SHORT, POLLFD_EVENTS, POLLIN);
        try {
            // The result does not matter: the caller progresses the worker either way.
            int ready = (int) poll.invokeExact(pollfd, 1L, timeoutMillis);
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    static MemorySegment allocatePollfd(Arena arena)
    {
        return arena.allocate(POLLFD);
    }

    /** An endpoint to the worker at {@code address}, without peer error handling (which rules out shared-memory transports). */
    MemorySegment createEndpoint(MemorySegment worker, byte[] address)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = arena.allocate(EP_PARAMS);
            params.set(JAVA_LONG, EP_FIELD_MASK, UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE);
            params.set(ADDRESS, EP_ADDRESS, arena.allocateFrom(JAVA_BYTE, address));
            params.set(JAVA_INT, EP_ERR_MODE, UCP_ERR_HANDLING_MODE_NONE);
            MemorySegment out = arena.allocate(ADDRESS);
            check("ucp_ep_create", (byte) epCreate.invokeExact(worker, params, out));
            return out.get(ADDRESS, 0);
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    /** Starts closing the endpoint (flushing it first); returns a status pointer (see {@link #isRequest}). */
    long closeEndpoint(MemorySegment endpoint, MemorySegment requestParam)
    {
        try {
            return ((MemorySegment) epCloseNbx.invokeExact(endpoint, requestParam)).address();
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    /** Starts a flush: completes once every put posted before it completed at the peer. Returns a status pointer. */
    long flush(MemorySegment endpoint, MemorySegment requestParam)
    {
        try {
            return ((MemorySegment) epFlushNbx.invokeExact(endpoint, requestParam)).address();
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    /** Registers existing memory with the context. */
    MemorySegment memMap(MemorySegment context, MemorySegment memory)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = arena.allocate(MEM_MAP_PARAMS);
            params.set(JAVA_LONG, MEM_MAP_FIELD_MASK, UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH);
            params.set(ADDRESS, MEM_MAP_ADDRESS, memory);
            params.set(JAVA_LONG, MEM_MAP_LENGTH, memory.byteSize());
            MemorySegment out = arena.allocate(ADDRESS);
            check("ucp_mem_map(" + memory.byteSize() + " bytes)", (byte) memMap.invokeExact(context, params, out));
            return out.get(ADDRESS, 0);
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    void memUnmap(MemorySegment context, MemorySegment memh)
    {
        try {
            check("ucp_mem_unmap", (byte) memUnmap.invokeExact(context, memh));
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    /** The remote key of a registration, packed and copied out (UCX's buffer is released at once). */
    byte[] packRkey(MemorySegment context, MemorySegment memh)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment bufferOut = arena.allocate(ADDRESS);
            MemorySegment sizeOut = arena.allocate(JAVA_LONG);
            check("ucp_rkey_pack", (byte) rkeyPack.invokeExact(context, memh, bufferOut, sizeOut));
            MemorySegment buffer = bufferOut.get(ADDRESS, 0);
            try {
                return buffer.reinterpret(sizeOut.get(JAVA_LONG, 0)).toArray(JAVA_BYTE);
            }
            finally {
                rkeyBufferRelease.invokeExact(buffer);
            }
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    MemorySegment unpackRkey(MemorySegment endpoint, byte[] packed)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check("ucp_ep_rkey_unpack", (byte) epRkeyUnpack.invokeExact(endpoint, arena.allocateFrom(JAVA_BYTE, packed), out));
            return out.get(ADDRESS, 0);
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    void destroyRkey(MemorySegment rkey)
    {
        try {
            rkeyDestroy.invokeExact(rkey);
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    /** Starts a put of {@code bytes} from {@code source} to {@code remoteAddress}; returns a status pointer. */
    long put(MemorySegment endpoint, MemorySegment source, long bytes, long remoteAddress, MemorySegment rkey, MemorySegment requestParam)
    {
        try {
            return ((MemorySegment) putNbx.invokeExact(endpoint, source, bytes, remoteAddress, rkey, requestParam)).address();
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    /** UCS_INPROGRESS while the request runs, then its final status. */
    int requestStatus(long request)
    {
        try {
            return (byte) requestCheckStatus.invokeExact(MemorySegment.ofAddress(request));
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    void freeRequest(long request)
    {
        try {
            requestFree.invokeExact(MemorySegment.ofAddress(request));
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    /** UCX's words for a status. */
    String statusString(int status)
    {
        try {
            MemorySegment text = (MemorySegment) statusString.invokeExact((byte) status);
            return text.equals(MemorySegment.NULL) ? "status " + status : text.reinterpret(256).getString(0);
        }
        catch (Throwable e) {
            throw rethrow(e);
        }
    }

    /** Whether a returned status pointer is a request to wait on (not NULL = done, not an error status). */
    static boolean isRequest(long statusPointer)
    {
        return statusPointer != 0 && !isError(statusPointer);
    }

    /** Whether a returned status pointer is an error status (UCS_PTR_IS_ERR: the top 100 values of the address space). */
    static boolean isError(long statusPointer)
    {
        return Long.compareUnsigned(statusPointer, UCS_ERR_LAST) >= 0;
    }

    /** The error status a status pointer carries (UCS_PTR_RAW_STATUS). */
    static int errorStatus(long statusPointer)
    {
        return (int) statusPointer;
    }

    private void check(String call, byte status)
    {
        if (status != UCS_OK) {
            throw new UcxException(call, status, statusString(status));
        }
    }

    private static MethodHandle bind(Linker linker, SymbolLookup lookup, String name, FunctionDescriptor descriptor)
    {
        MemorySegment symbol = lookup.find(name).orElseThrow(() -> new IllegalStateException(
                "the UCX library has no symbol " + name + ": it is not UCX " + API_MAJOR + "." + API_MINOR + " or newer"));
        return linker.downcallHandle(symbol, descriptor);
    }

    private static RuntimeException rethrow(Throwable e)
    {
        if (e instanceof RuntimeException runtime) {
            throw runtime;
        }
        if (e instanceof Error error) {
            throw error;
        }
        throw new IllegalStateException(e);
    }
}
