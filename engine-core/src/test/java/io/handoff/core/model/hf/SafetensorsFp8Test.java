package io.handoff.core.model.hf;

import io.handoff.core.model.E4m3Reference;
import io.handoff.core.model.WeightMatrix;
import io.handoff.testkit.model.SafetensorsEncoder;
import io.handoff.testkit.model.SafetensorsEncoder.Stored;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.SequencedMap;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** FP8 E4M3 tensors with their {@code _scale_inv} block scales, as config.json's {@code quantization_config} declares them. */
class SafetensorsFp8Test
{
    private static final int ROWS = 200;
    private static final int COLS = 130;
    private static final String NAME = "model.layers.0.mlp.down_proj.weight";

    @TempDir
    Path dir;

    private final SequencedMap<String, Stored> tensors = new LinkedHashMap<>();
    private final byte[] codes = new byte[ROWS * COLS];
    private final float[] scales = {0.5f / 448, 0.25f / 448, 3f / 448, 0.01f};

    SafetensorsFp8Test()
    {
        SplittableRandom random = new SplittableRandom(5);
        for (int i = 0; i < codes.length; i++) {
            int code = random.nextInt(256);
            codes[i] = (byte) (E4m3Reference.isNan(code) ? code ^ 1 : code);
        }
    }

    private void write(String quantizationConfig)
            throws IOException
    {
        Files.writeString(dir.resolve(HfModelConfig.FILE), "{\"architectures\": [\"DeepseekV3ForCausalLM\"]"
                + (quantizationConfig == null ? "" : ", \"quantization_config\": " + quantizationConfig) + "}");
        SafetensorsWriter.writeBytes(dir.resolve(SafetensorsWeights.SINGLE_FILE), SafetensorsEncoder.encode(tensors));
    }

    private void writeFp8(String quantizationConfig)
            throws IOException
    {
        tensors.put(NAME, new Stored("F8_E4M3", new int[] {ROWS, COLS}, codes));
        tensors.put(NAME + "_scale_inv", new Stored("F32", new int[] {2, 2}, SafetensorsEncoder.bytes(scales, TensorDtype.F32)));
        write(quantizationConfig);
    }

    private static String blocks(String size)
    {
        return "{\"quant_method\": \"fp8\", \"fmt\": \"e4m3\", \"activation_scheme\": \"dynamic\", \"weight_block_size\": " + size + "}";
    }

    @Test
    void anFp8MatrixAndItsFloatsReadEachCodeTimesItsBlocksScale()
            throws IOException
    {
        writeFp8(blocks("[128, 128]"));
        try (SafetensorsWeights weights = SafetensorsWeights.open(dir)) {
            WeightMatrix matrix = weights.matrix(NAME, ROWS, COLS);
            float[] floats = weights.floats(NAME, ROWS, COLS);
            assertThat(matrix.elementType()).isEqualTo("F8_E4M3");
            assertThat(matrix.byteSize()).isEqualTo(ROWS * COLS + 16);
            float[] row = new float[COLS];
            for (int r = 0; r < ROWS; r++) {
                matrix.readRow(r, row, 0);
                for (int c = 0; c < COLS; c++) {
                    float expected = (float) E4m3Reference.value(codes[r * COLS + c] & 0xff) * scales[r / 128 * 2 + c / 128];
                    assertThat(row[c]).as("(%d, %d)", r, c).isEqualTo(expected);
                    assertThat(floats[r * COLS + c]).isEqualTo(expected);
                }
            }
        }
    }

    @Test
    void anFp8TensorWithoutItsScalesIsRefusedNamingThem()
            throws IOException
    {
        tensors.put(NAME, new Stored("F8_E4M3", new int[] {ROWS, COLS}, codes));
        write(blocks("[128, 128]"));
        try (SafetensorsWeights weights = SafetensorsWeights.open(dir)) {
            assertThatThrownBy(() -> weights.matrix(NAME, ROWS, COLS)).hasMessageContaining("tensor '" + NAME + "' in ")
                    .hasMessageContaining("is F8_E4M3, but its block scales '" + NAME + "_scale_inv' are not in the checkpoint");
            assertThatThrownBy(() -> weights.floats(NAME, ROWS, COLS)).hasMessageContaining("_scale_inv' are not in the checkpoint");
        }
    }

    @Test
    void scalesForOtherBlocksThanTheConfigsAreRefusedWithBothShapes()
            throws IOException
    {
        writeFp8(blocks("[64, 128]"));
        try (SafetensorsWeights weights = SafetensorsWeights.open(dir)) {
            assertThatThrownBy(() -> weights.matrix(NAME, ROWS, COLS))
                    .hasMessageContaining("have shape [2, 2], but a 200 x 130 weight in config.json's 64 x 128 blocks "
                            + "(quantization_config.weight_block_size) has [4, 2]; the checkpoint's blocks are not the ones its config declares");
        }
    }

    @Test
    void anFp8TensorWithoutAQuantizationConfigIsRefused()
            throws IOException
    {
        writeFp8(null);
        try (SafetensorsWeights weights = SafetensorsWeights.open(dir)) {
            assertThatThrownBy(() -> weights.matrix(NAME, ROWS, COLS)).hasMessageContaining("is F8_E4M3, but config.json has no quantization_config");
        }
    }

    @Test
    void aNanCodeIsRefusedNamingTheTensorAndTheElement()
            throws IOException
    {
        codes[150 * COLS + 129] = (byte) 0xff;
        writeFp8(blocks("[128, 128]"));
        try (SafetensorsWeights weights = SafetensorsWeights.open(dir)) {
            assertThatThrownBy(() -> weights.matrix(NAME, ROWS, COLS)).hasMessageContaining("tensor '" + NAME + "'")
                    .hasMessageContaining("FP8 element (150, 129) is the E4M3 NaN code 0xff");
        }
    }

    @Test
    void scalesBesideAWeightThatIsNotFp8AreRefused()
            throws IOException
    {
        tensors.put(NAME, new Stored("BF16", new int[] {ROWS, COLS}, new byte[2 * ROWS * COLS]));
        tensors.put(NAME + "_scale_inv", new Stored("F32", new int[] {2, 2}, SafetensorsEncoder.bytes(scales, TensorDtype.F32)));
        write(blocks("[128, 128]"));
        try (SafetensorsWeights weights = SafetensorsWeights.open(dir)) {
            assertThatThrownBy(() -> weights.matrix(NAME, ROWS, COLS)).hasMessageContaining("is BF16 but the checkpoint also holds block scales");
        }
    }

    @Test
    void quantizationConfigsOtherThanE4m3BlocksAreRefusedAtOpenNamingTheField()
            throws IOException
    {
        String[][] cases = {
                {"{\"quant_method\": \"gptq\", \"bits\": 4}", "\"quant_method\" is \"gptq\"; the engine reads only \"fp8\""},
                {"{\"quant_method\": \"fp8\", \"fmt\": \"e5m2\", \"weight_block_size\": [128, 128]}", "\"fmt\" is \"e5m2\"; only \"e4m3\""},
                {"{\"quant_method\": \"fp8\", \"activation_scheme\": \"static\", \"weight_block_size\": [128, 128]}",
                        "\"activation_scheme\" is \"static\""},
                {"{\"quant_method\": \"fp8\"}", "\"weight_block_size\" must be [rows, cols]"},
                {blocks("[128, 96]"), "FP8 blocks of 128 x 96 are not supported"},
                {"[1]", "\"quantization_config\" must be an object or null"},
        };
        for (String[] c : cases) {
            tensors.clear();
            writeFp8(c[0]);
            assertThatThrownBy(() -> SafetensorsWeights.open(dir)).as(c[0]).hasMessageContaining(c[1])
                    .hasMessageContaining(dir.resolve(HfModelConfig.FILE).toString());
        }
    }

    @Test
    void e5m2WeightsAreRefusedAtOpenSayingWhatIsRead()
            throws IOException
    {
        tensors.put(NAME, new Stored("F8_E5M2", new int[] {ROWS, COLS}, codes));
        write(blocks("[128, 128]"));
        assertThatThrownBy(() -> SafetensorsWeights.open(dir)).hasMessageContaining("tensor '" + NAME + "' has dtype F8_E5M2, which the "
                + "engine does not read: FP8 weights are read as E4M3 with block scales");
    }
}
