package io.handoff.core.model.hf;

import io.handoff.core.model.DeepseekConfig;
import io.handoff.core.model.E4m3Reference;
import io.handoff.testkit.model.SafetensorsEncoder;
import io.handoff.testkit.model.SafetensorsEncoder.Stored;
import io.handoff.testkit.model.SeededDeepseekCheckpoint;
import io.handoff.testkit.model.SeededDeepseekCheckpoint.Options;
import io.handoff.testkit.model.SeededDeepseekCheckpoint.Tensor;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.SequencedMap;

/**
 * A seeded DeepSeek checkpoint as DeepSeek-V3's FP8 release stores it, and its F32 expansion beside it. Every
 * {@code *_proj.weight} is quantized as DeepSeek's tooling does: per 128 x 128 block a scale {@code amax / 448}
 * ({@code weight_scale_inv}, F32) and each weight the E4M3 code nearest {@code w / scale}; embeddings, norms, the router's
 * gate and {@code lm_head} are BF16, the correction bias F32; config.json gains the release's {@code quantization_config}.
 * The expansion holds, in F32, what those bytes stand for: {@code e4m3(code) * scale} rounded once, and the BF16 values.
 */
final class Fp8DeepseekCheckpoint
{
    static final int BLOCK = 128;
    static final String QUANTIZATION_CONFIG = "\"quantization_config\": {\"activation_scheme\": \"dynamic\", \"fmt\": \"e4m3\", "
            + "\"quant_method\": \"fp8\", \"weight_block_size\": [128, 128]}";

    private Fp8DeepseekCheckpoint() {}

    /** Writes the FP8 checkpoint into {@code fp8} and its expansion into {@code expansion}; returns their configuration. */
    static DeepseekConfig write(Path fp8, Path expansion, Options options)
    {
        DeepseekConfig config = SeededDeepseekCheckpoint.write(fp8, options.withDtype(TensorDtype.F32));
        SeededDeepseekCheckpoint.write(expansion, options.withDtype(TensorDtype.F32));
        SequencedMap<String, Stored> stored = new LinkedHashMap<>();
        SequencedMap<String, Stored> expanded = new LinkedHashMap<>();
        SeededDeepseekCheckpoint.tensors(config, options.seed()).forEach((name, tensor) -> {
            float[] values;
            if (name.endsWith("_proj.weight")) {
                values = quantize(name, tensor, stored);
            }
            else if (name.endsWith("e_score_correction_bias")) {
                values = tensor.values();
                stored.put(name, new Stored("F32", tensor.shape(), SafetensorsEncoder.bytes(values, TensorDtype.F32)));
            }
            else {
                values = tensor.values().clone();
                for (int i = 0; i < values.length; i++) {
                    values[i] = SafetensorsEncoder.rounded(TensorDtype.BF16, values[i]);
                }
                stored.put(name, new Stored("BF16", tensor.shape(), SafetensorsEncoder.bytes(values, TensorDtype.BF16)));
            }
            expanded.put(name, new Stored("F32", tensor.shape(), SafetensorsEncoder.bytes(values, TensorDtype.F32)));
        });
        try {
            Files.write(fp8.resolve(SafetensorsWeights.SINGLE_FILE), SafetensorsEncoder.encode(stored));
            Files.write(expansion.resolve(SafetensorsWeights.SINGLE_FILE), SafetensorsEncoder.encode(expanded));
            Path configJson = fp8.resolve(HfModelConfig.FILE);
            String json = Files.readString(configJson).strip();
            Files.writeString(configJson, json.substring(0, json.length() - 1) + ", " + QUANTIZATION_CONFIG + "}\n");
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return config;
    }

    /** Stores {@code tensor} as E4M3 codes with its block scales; returns the values they stand for. */
    private static float[] quantize(String name, Tensor tensor, SequencedMap<String, Stored> stored)
    {
        int rows = tensor.shape()[0];
        int cols = tensor.shape()[1];
        int scaleRows = Math.ceilDiv(rows, BLOCK);
        int scaleCols = Math.ceilDiv(cols, BLOCK);
        float[] w = tensor.values();
        float[] scales = new float[scaleRows * scaleCols];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                int block = r / BLOCK * scaleCols + c / BLOCK;
                scales[block] = Math.max(scales[block], Math.abs(w[r * cols + c]));
            }
        }
        for (int b = 0; b < scales.length; b++) {
            scales[b] = scales[b] == 0 ? 1 : (float) (scales[b] / E4m3Reference.MAX);
        }
        byte[] codes = new byte[rows * cols];
        float[] values = new float[rows * cols];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                float scale = scales[r / BLOCK * scaleCols + c / BLOCK];
                double scaled = Math.clamp(w[r * cols + c] / (double) scale, -E4m3Reference.MAX, E4m3Reference.MAX);
                codes[r * cols + c] = E4m3Reference.nearest(scaled);
                values[r * cols + c] = (float) E4m3Reference.value(codes[r * cols + c] & 0xff) * scale;
            }
        }
        stored.put(name, new Stored("F8_E4M3", tensor.shape(), codes));
        stored.put(Fp8BlockScaling.scaleName(name), new Stored("F32", new int[] {scaleRows, scaleCols},
                SafetensorsEncoder.bytes(scales, TensorDtype.F32)));
        return values;
    }
}
