package io.handoff.bench.attention;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.spi.attention.AttentionArithmetic;
import io.handoff.spi.attention.KvDtype;

import java.math.BigDecimal;
import java.math.MathContext;
import java.util.Arrays;
import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * The measured rounds: each round runs the streaming kernel once, then every sequence length's decode and extend,
 * so the reference and the measurements share the machine's state of the moment (a shared machine's load moves them
 * together). Each figure is the median over rounds.
 */
final class RoundRobin
{
    private final AttentionTimer timer;
    private final ReadBandwidth stream;
    private final List<SeqLenCase> cases;
    private double[] streamGbps = new double[0];
    private double[][] decodeGbps = new double[0][];
    private double[][] extendTokensPerSecond = new double[0][];

    RoundRobin(AttentionTimer timer, ReadBandwidth stream, List<SeqLenCase> cases)
    {
        this.timer = requireNonNull(timer, "timer is null");
        this.stream = requireNonNull(stream, "stream is null");
        this.cases = List.copyOf(cases);
    }

    /** Compiles the kernels and sizes each case's repetitions so one measurement takes about {@code targetSeconds}. */
    void warmUp(double targetSeconds)
    {
        stream.warmUp();
        stream.measure();
        for (SeqLenCase c : cases) {
            timer.decode(c.decode, c.decodeQ, c.decodeOut, 1);
            c.decodeIterations = AttentionTimer.iterationsFor(timer.decode(c.decode, c.decodeQ, c.decodeOut, 1), targetSeconds);
            timer.extend(c.extend, c.extendQ, c.extendOut, 1);
            c.extendIterations = AttentionTimer.iterationsFor(timer.extend(c.extend, c.extendQ, c.extendOut, 1), targetSeconds);
        }
    }

    void run(int rounds)
    {
        streamGbps = new double[rounds];
        decodeGbps = new double[cases.size()][rounds];
        extendTokensPerSecond = new double[cases.size()][rounds];
        for (int r = 0; r < rounds; r++) {
            streamGbps[r] = stream.measure();
            for (int i = 0; i < cases.size(); i++) {
                SeqLenCase c = cases.get(i);
                double seconds = timer.decode(c.decode, c.decodeQ, c.decodeOut, c.decodeIterations);
                decodeGbps[i][r] = c.decodeBytes * (double) c.decodeIterations / seconds / 1e9;
                seconds = timer.extend(c.extend, c.extendQ, c.extendOut, c.extendIterations);
                extendTokensPerSecond[i][r] = c.extendTokens * (double) c.extendIterations / seconds;
            }
        }
    }

    ObjectNode result(String plugin, String model, AttentionArithmetic arithmetic, KvDtype dtype, int pageSize, int layers, int batch, int threads,
            long poolBytes)
    {
        ObjectNode root = new ObjectMapper().createObjectNode();
        root.put("plugin", plugin);
        root.put("model", model);
        root.put("arithmetic", arithmetic.name());
        root.put("kv_dtype", dtype.name());
        root.put("page_size", pageSize);
        root.put("layers", layers);
        root.put("batch", batch);
        root.put("threads", threads);
        root.put("rounds", streamGbps.length);
        root.put("kv_pool_bytes", poolBytes);
        double reference = median(streamGbps);
        ObjectNode readBandwidth = root.putObject("read_bandwidth");
        readBandwidth.put("kernel", ReadBandwidth.KERNEL);
        readBandwidth.put("buffer_bytes", stream.bytes());
        readBandwidth.put("gbps", round(reference));
        readBandwidth.put("min_gbps", round(Arrays.stream(streamGbps).min().orElse(0)));
        readBandwidth.put("max_gbps", round(Arrays.stream(streamGbps).max().orElse(0)));
        ArrayNode rows = root.putArray("results");
        for (int i = 0; i < cases.size(); i++) {
            SeqLenCase c = cases.get(i);
            double attention = median(decodeGbps[i]);
            ObjectNode row = rows.addObject();
            row.put("seq_len", c.seqLen);
            row.put("batch", batch);
            row.put("kv_bytes", c.decodeBytes);
            row.put("attention_gbps", round(attention));
            row.put("read_bandwidth_gbps", round(reference));
            row.put("ratio_read_bandwidth", round(attention / reference));
            row.put("decode_step_ms", round(c.decodeBytes / attention / 1e6));
            row.put("extend_tokens", c.extendTokens);
            row.put("extend_tokens_per_s", round(median(extendTokensPerSecond[i])));
            row.put("decode_matches_extend", c.decodeMatchesExtend());
        }
        return root;
    }

    static double median(double[] values)
    {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    /** Four significant digits: a small figure on a loaded machine must not round to 0. */
    static double round(double value)
    {
        return Double.isFinite(value) && value != 0 ? new BigDecimal(value).round(new MathContext(4)).doubleValue() : value;
    }
}
