package io.handoff.plugin.nixl;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;

import static java.lang.foreign.MemoryLayout.paddingLayout;
import static java.lang.foreign.MemoryLayout.structLayout;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The UCX structs and constants the binding passes, declared from UCX 1.13.1's headers
 * ({@code /usr/include/ucp/api/ucp.h}, {@code ucp_def.h}, {@code ucs/type/status.h}, {@code ucs/type/thread_mode.h})
 * for x86-64/aarch64 LP64. Offsets and sizes were checked against {@code offsetof}/{@code sizeof} of those headers;
 * each struct's total size is asserted below. Fields the binding never sets are kept as named members or padding so
 * that every offset matches; UCX reads only the fields named in {@code field_mask}, so zeroed members are ignored.
 */
final class UcpStructs
{
    private UcpStructs() {}

    /** {@code ucp_params_t} (ucp.h): 80 bytes. */
    static final StructLayout PARAMS = structLayout(
            JAVA_LONG.withName("field_mask"),          // 0
            JAVA_LONG.withName("features"),            // 8
            JAVA_LONG.withName("request_size"),        // 16
            ADDRESS.withName("request_init"),          // 24
            ADDRESS.withName("request_cleanup"),       // 32
            JAVA_LONG.withName("tag_sender_mask"),     // 40
            JAVA_INT.withName("mt_workers_shared"),    // 48
            paddingLayout(4),
            JAVA_LONG.withName("estimated_num_eps"),   // 56
            JAVA_LONG.withName("estimated_num_ppn"),   // 64
            ADDRESS.withName("name"));                 // 72

    /** {@code ucp_worker_params_t} (ucp.h): 200 bytes; {@code cpu_mask} is a 128-byte {@code ucs_cpu_set_t}. */
    static final StructLayout WORKER_PARAMS = structLayout(
            JAVA_LONG.withName("field_mask"),          // 0
            JAVA_INT.withName("thread_mode"),          // 8  ucs_thread_mode_t
            paddingLayout(4),
            paddingLayout(128).withName("cpu_mask"),   // 16
            JAVA_INT.withName("events"),               // 144
            paddingLayout(4),
            ADDRESS.withName("user_data"),             // 152
            JAVA_INT.withName("event_fd"),             // 160
            paddingLayout(4),
            JAVA_LONG.withName("flags"),               // 168
            ADDRESS.withName("name"),                  // 176
            JAVA_LONG.withName("am_alignment"),        // 184
            JAVA_LONG.withName("client_id"));          // 192

    /** {@code ucp_ep_params_t} (ucp_def.h): 104 bytes; err_handler is {cb, arg}, sockaddrs are {addr, addrlen}. */
    static final StructLayout EP_PARAMS = structLayout(
            JAVA_LONG.withName("field_mask"),          // 0
            ADDRESS.withName("address"),               // 8  const ucp_address_t *
            JAVA_INT.withName("err_mode"),             // 16 ucp_err_handling_mode_t
            paddingLayout(4),
            paddingLayout(16).withName("err_handler"), // 24
            ADDRESS.withName("user_data"),             // 40
            JAVA_INT.withName("flags"),                // 48
            paddingLayout(4),
            paddingLayout(16).withName("sockaddr"),    // 56
            ADDRESS.withName("conn_request"),          // 72
            ADDRESS.withName("name"),                  // 80
            paddingLayout(16).withName("local_sockaddr")); // 88

    /** {@code ucp_mem_map_params_t} (ucp.h): 40 bytes. */
    static final StructLayout MEM_MAP_PARAMS = structLayout(
            JAVA_LONG.withName("field_mask"),          // 0
            ADDRESS.withName("address"),               // 8
            JAVA_LONG.withName("length"),              // 16
            JAVA_INT.withName("flags"),                // 24
            JAVA_INT.withName("prot"),                 // 28
            JAVA_INT.withName("memory_type"),          // 32 ucs_memory_type_t
            paddingLayout(4));

    /** {@code ucp_request_param_t} (ucp.h): 72 bytes; cb and recv_info are unions of pointers. */
    static final StructLayout REQUEST_PARAM = structLayout(
            JAVA_INT.withName("op_attr_mask"),         // 0
            JAVA_INT.withName("flags"),                // 4
            ADDRESS.withName("request"),               // 8
            ADDRESS.withName("cb"),                    // 16
            JAVA_LONG.withName("datatype"),            // 24 ucp_datatype_t
            ADDRESS.withName("user_data"),             // 32
            ADDRESS.withName("reply_buffer"),          // 40
            JAVA_INT.withName("memory_type"),          // 48
            paddingLayout(4),
            ADDRESS.withName("recv_info"),             // 56
            ADDRESS.withName("memh"));                 // 64

    /** {@code struct pollfd} (poll.h): 8 bytes. */
    static final StructLayout POLLFD = structLayout(
            JAVA_INT.withName("fd"),
            ValueLayout.JAVA_SHORT.withName("events"),
            ValueLayout.JAVA_SHORT.withName("revents"));

    static final long PARAMS_FIELD_MASK = offset(PARAMS, "field_mask");
    static final long PARAMS_FEATURES = offset(PARAMS, "features");
    static final long PARAMS_MT_WORKERS_SHARED = offset(PARAMS, "mt_workers_shared");
    static final long WORKER_FIELD_MASK = offset(WORKER_PARAMS, "field_mask");
    static final long WORKER_THREAD_MODE = offset(WORKER_PARAMS, "thread_mode");
    static final long EP_FIELD_MASK = offset(EP_PARAMS, "field_mask");
    static final long EP_ADDRESS = offset(EP_PARAMS, "address");
    static final long EP_ERR_MODE = offset(EP_PARAMS, "err_mode");
    static final long MEM_MAP_FIELD_MASK = offset(MEM_MAP_PARAMS, "field_mask");
    static final long MEM_MAP_ADDRESS = offset(MEM_MAP_PARAMS, "address");
    static final long MEM_MAP_LENGTH = offset(MEM_MAP_PARAMS, "length");
    static final long REQUEST_OP_ATTR_MASK = offset(REQUEST_PARAM, "op_attr_mask");
    static final long REQUEST_MEMH = offset(REQUEST_PARAM, "memh");
    static final long POLLFD_FD = offset(POLLFD, "fd");
    static final long POLLFD_EVENTS = offset(POLLFD, "events");

    // ucp_params_field / ucp_feature (ucp.h)
    static final long UCP_PARAM_FIELD_FEATURES = 1L << 0;
    static final long UCP_PARAM_FIELD_MT_WORKERS_SHARED = 1L << 5;
    static final long UCP_FEATURE_RMA = 1L << 1;
    static final long UCP_FEATURE_WAKEUP = 1L << 4;
    // ucp_worker_params_field (ucp.h), ucs_thread_mode_t (ucs/type/thread_mode.h)
    static final long UCP_WORKER_PARAM_FIELD_THREAD_MODE = 1L << 0;
    static final int UCS_THREAD_MODE_SERIALIZED = 1;
    // ucp_ep_params_field (ucp.h), ucp_err_handling_mode_t (ucp_def.h)
    static final long UCP_EP_PARAM_FIELD_REMOTE_ADDRESS = 1L << 0;
    static final long UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE = 1L << 1;
    static final int UCP_ERR_HANDLING_MODE_NONE = 0;
    // ucp_mem_map_params_field (ucp.h)
    static final long UCP_MEM_MAP_PARAM_FIELD_ADDRESS = 1L << 0;
    static final long UCP_MEM_MAP_PARAM_FIELD_LENGTH = 1L << 1;
    // ucp_op_attr_t (ucp.h)
    static final int UCP_OP_ATTR_FIELD_MEMH = 1 << 8;
    // ucs_status_t (ucs/type/status.h): a packed enum, one signed byte
    static final int UCS_OK = 0;
    static final int UCS_INPROGRESS = 1;
    static final int UCS_ERR_BUSY = -15;
    static final int UCS_ERR_LAST = -100;
    // poll.h
    static final short POLLIN = 1;

    static {
        check(PARAMS, 80);
        check(WORKER_PARAMS, 200);
        check(EP_PARAMS, 104);
        check(MEM_MAP_PARAMS, 40);
        check(REQUEST_PARAM, 72);
        check(POLLFD, 8);
    }

    private static long offset(StructLayout layout, String name)
    {
        return layout.byteOffset(MemoryLayout.PathElement.groupElement(name));
    }

    private static void check(StructLayout layout, long size)
    {
        if (layout.byteSize() != size) {
            throw new AssertionError("UCX struct layout is " + layout.byteSize() + " bytes, UCX 1.13 headers say " + size);
        }
    }
}
