package io.handoff.cli;

import io.handoff.core.runtime.ModelSource;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * How a model is served, the same options on every command that runs one (a mixin): the name it is served under, the
 * attention kernels, the compute threads, the tensor-parallel ranks and the KV pool's element type and size. Each sets one configuration key, so
 * {@code -D} and the configuration file can say the same.
 */
public final class TuningOptions
{
    private static final Set<String> DTYPES = Set.of("auto", "f32", "bf16", "f16");
    private static final Pattern BYTES = Pattern.compile("\\d+\\s*(B|K|KB|KiB|M|MB|MiB|G|GB|GiB|T|TB|TiB)?", Pattern.CASE_INSENSITIVE);

    @Option(names = "--served-model-name", paramLabel = "NAME",
            description = "The model id clients send and GET /v1/models lists (default: the checkpoint folder's name, the GGUF file's "
                    + "general.name, or the preset's); sets " + ModelSource.SERVED_NAME_KEY + ".")
    public String servedModelName;

    @Option(names = "--attention", paramLabel = "ID", description = "Attention backend (triton, aiter); sets handoff.attention.backend.")
    public String attention;

    @Option(names = "--threads", paramLabel = "N", description = "Compute threads per server, 0 for one per core; sets handoff.scheduler.threads.")
    public Integer threads;

    @Option(names = "--tensor-parallel", paramLabel = "T", description = "Tensor-parallel ranks per server, 1..8, each a process on this host "
            + "(same output bits for every T); sets handoff.parallel.tensor-size.")
    public Integer tensorParallel;

    @Option(names = "--data-parallel", paramLabel = "D", description = "Data-parallel attention ranks per server, 1..8, each a process on this host "
            + "(MLA models: each rank attends for its own requests; same output bits for every D); sets handoff.parallel.data-parallel-size.")
    public Integer dataParallel;

    @Option(names = "--kv-dtype", paramLabel = "TYPE", description = "Element type of the KV pool: auto, f32, bf16 or f16; sets handoff.kv.dtype.")
    public String kvDtype;

    @Option(names = "--kv-pool-memory", paramLabel = "SIZE", description = "Memory of the KV pool, e.g. 2GiB; sets handoff.kv.pool-memory "
            + "(handoff config --model-path PATH --json shows what it holds).")
    public String kvPoolMemory;

    @Spec(Spec.Target.MIXEE)
    CommandSpec command;

    /** Adds the options given to {@code overrides}, after checking each value's form. */
    public void applyTo(Map<String, String> overrides)
    {
        if (servedModelName != null) {
            if (servedModelName.isBlank() || servedModelName.length() > 256 || servedModelName.chars().anyMatch(Character::isISOControl)) {
                throw usage("--served-model-name must be 1 to 256 printable characters, got '" + servedModelName + "'");
            }
            overrides.put(ModelSource.SERVED_NAME_KEY, servedModelName);
        }
        if (attention != null) {
            overrides.put("handoff.attention.backend", attention);
        }
        if (threads != null) {
            if (threads < 0 || threads > 4096) {
                throw usage("--threads must be in 0..4096 (0: one per core), got " + threads);
            }
            overrides.put("handoff.scheduler.threads", Integer.toString(threads));
        }
        if (dataParallel != null) {
            if (dataParallel < 1 || dataParallel > 8) {
                throw usage("--data-parallel must be in 1..8, got " + dataParallel);
            }
            overrides.put("handoff.parallel.data-parallel-size", Integer.toString(dataParallel));
        }
        if (tensorParallel != null) {
            if (tensorParallel < 1 || tensorParallel > 8) {
                throw usage("--tensor-parallel must be in 1..8, got " + tensorParallel);
            }
            overrides.put("handoff.parallel.tensor-size", Integer.toString(tensorParallel));
        }
        if (kvDtype != null) {
            String dtype = kvDtype.toLowerCase(Locale.ROOT);
            if (!DTYPES.contains(dtype)) {
                throw usage("--kv-dtype must be auto, f32, bf16 or f16, got '" + kvDtype + "'");
            }
            overrides.put("handoff.kv.dtype", dtype);
        }
        if (kvPoolMemory != null) {
            if (!BYTES.matcher(kvPoolMemory.strip()).matches()) {
                throw usage("--kv-pool-memory must be a size such as 2GiB or 512MiB, got '" + kvPoolMemory + "'");
            }
            overrides.put("handoff.kv.pool-memory", kvPoolMemory.strip());
        }
    }

    private ParameterException usage(String message)
    {
        return new ParameterException(command.commandLine(), message);
    }
}
