package io.handoff.core.model.gguf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class GgufFileTest
{
    @TempDir
    Path dir;

    private static GgufWriter everyValueType()
    {
        return new GgufWriter()
                .put("u8", GgufValueType.UINT8, 200)
                .put("i8", GgufValueType.INT8, -100)
                .put("u16", GgufValueType.UINT16, 60000)
                .put("i16", GgufValueType.INT16, -30000)
                .put("u32", GgufValueType.UINT32, 4_000_000_000L)
                .put("i32", GgufValueType.INT32, -2_000_000_000)
                .put("f32", GgufValueType.FLOAT32, 1.5e-5f)
                .put("bool", GgufValueType.BOOL, true)
                .put("string", GgufValueType.STRING, "héllo ✓")
                .put("u64", GgufValueType.UINT64, 1L << 40)
                .put("i64", GgufValueType.INT64, -(1L << 50))
                .put("f64", GgufValueType.FLOAT64, Math.PI)
                .put("strings", GgufValueType.ARRAY, new GgufWriter.Array(GgufValueType.STRING, List.of("a", "", "ccc")))
                .put("ints", GgufValueType.ARRAY, new GgufWriter.Array(GgufValueType.INT32, List.of(1, -2, 3)))
                .put("nested", GgufValueType.ARRAY, new GgufWriter.Array(GgufValueType.ARRAY, List.of(
                        new GgufWriter.Array(GgufValueType.UINT8, List.of(1, 2)), new GgufWriter.Array(GgufValueType.UINT8, List.of()))));
    }

    @Test
    void everyMetadataTypeReadsBackAsWritten()
    {
        Path path = everyValueType().write(dir.resolve("m.gguf"));
        try (GgufFile file = GgufFile.open(path)) {
            GgufMetadata m = file.metadata();
            assertThat(file.version()).isEqualTo(3);
            assertThat(m.values().keySet()).containsExactly("u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "u64",
                    "i64", "f64", "strings", "ints", "nested");
            assertThat(m.values().get("u8")).isEqualTo(new GgufValue(GgufValueType.UINT8, 200));
            assertThat(m.values().get("i8")).isEqualTo(new GgufValue(GgufValueType.INT8, -100));
            assertThat(m.values().get("u16")).isEqualTo(new GgufValue(GgufValueType.UINT16, 60000));
            assertThat(m.values().get("i16")).isEqualTo(new GgufValue(GgufValueType.INT16, -30000));
            assertThat(m.integer("u32")).isEqualTo(4_000_000_000L);
            assertThat(m.values().get("i32")).isEqualTo(new GgufValue(GgufValueType.INT32, -2_000_000_000));
            assertThat(m.optionalNumber("f32")).contains((double) 1.5e-5f);
            assertThat(m.optionalBool("bool")).contains(true);
            assertThat(m.string("string")).isEqualTo("héllo ✓");
            assertThat(m.integer("u64")).isEqualTo(1L << 40);
            assertThat(m.integer("i64")).isEqualTo(-(1L << 50));
            assertThat(m.optionalNumber("f64")).contains(Math.PI);
            assertThat(m.optionalStrings("strings")).contains(List.of("a", "", "ccc"));
            assertThat(m.optionalInts("ints")).contains(List.of(1, -2, 3));
            GgufValue.GgufArray nested = (GgufValue.GgufArray) m.values().get("nested").value();
            assertThat(nested.elementType()).isEqualTo(GgufValueType.ARRAY);
            assertThat(nested.elements()).containsExactly(
                    new GgufValue(GgufValueType.ARRAY, new GgufValue.GgufArray(GgufValueType.UINT8,
                            List.of(new GgufValue(GgufValueType.UINT8, 1), new GgufValue(GgufValueType.UINT8, 2)))),
                    new GgufValue(GgufValueType.ARRAY, new GgufValue.GgufArray(GgufValueType.UINT8, List.of())));
            assertThat(file.tensors()).isEmpty();
        }
    }

    @Test
    void aReadOfTheWrongTypeNamesTheFileTheKeyAndBothTypes()
    {
        Path path = everyValueType().write(dir.resolve("m.gguf"));
        try (GgufFile file = GgufFile.open(path)) {
            assertThatThrownBy(() -> file.metadata().string("u32")).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith(path + ": metadata key 'u32' is UINT32, expected STRING");
            assertThatThrownBy(() -> file.metadata().optionalStrings("ints")).hasMessageStartingWith(
                    path + ": metadata key 'ints' is ARRAY of INT32, expected ARRAY of STRING");
            assertThatThrownBy(() -> file.metadata().intValue("u32", 1, Integer.MAX_VALUE)).hasMessageStartingWith(
                    path + ": metadata key 'u32' is 4000000000, outside 1 to 2147483647");
            assertThatThrownBy(() -> file.metadata().string("absent")).hasMessageStartingWith(
                    path + ": metadata key 'absent' (STRING) is missing");
        }
    }

    @Test
    void versionTwoAndACustomAlignmentPlaceTensorsOnAlignedOffsets()
    {
        float[] a = {1, 2, 3};
        float[] b = {4, 5, 6, 7, 8, 9};
        Path path = new GgufWriter().version(2).alignment(64)
                .tensor("a", GgufTensorType.F32, new long[] {3}, a)
                .tensor("b", GgufTensorType.F32, new long[] {3, 2}, b)
                .write(dir.resolve("t.gguf"));
        try (GgufFile file = GgufFile.open(path)) {
            assertThat(file.version()).isEqualTo(2);
            GgufTensor ta = file.tensor("a").orElseThrow();
            GgufTensor tb = file.tensor("b").orElseThrow();
            assertThat(ta.offset()).isEqualTo(0);
            assertThat(tb.offset()).isEqualTo(64);
            assertThat(tb.dims()).containsExactly(3, 2);
            assertThat(tb.rowMajorShape()).containsExactly(2, 3);
            assertThat(ta.toFloats()).containsExactly(a);
            assertThat(tb.toFloats()).containsExactly(b);
            assertThat(tb.data().byteSize()).isEqualTo(24);
        }
    }

    @Test
    void aTruncatedFileIsRefusedNamingIt() throws Exception
    {
        byte[] bytes = smallModelFile();
        Path path = dir.resolve("short.gguf");
        for (int length : new int[] {0, 3, 10, 23, 40, bytes.length - 1}) {
            Files.write(path, Arrays.copyOf(bytes, length));
            assertThatThrownBy(() -> GgufFile.open(path).close()).as("length " + length)
                    .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith(path + ": ");
        }
    }

    @Test
    void aBadMagicIsRefused() throws Exception
    {
        byte[] bytes = smallModelFile();
        bytes[0] = 'X';
        assertRefused(bytes, "starts with bytes 58475546, not the GGUF magic");
    }

    @Test
    void versionOneIsRefused() throws Exception
    {
        assertRefused(new GgufWriter().version(1).toBytes(), "is GGUF version 1; versions 2 and 3 are read");
    }

    @Test
    void aTensorCountLargerThanTheFileIsRefused() throws Exception
    {
        byte[] bytes = smallModelFile();
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putLong(8, 1L << 40);
        assertRefused(bytes, "the tensor count at offset 8 is 1099511627776, more than the tensor infos the file can hold");
    }

    @Test
    void aStringLengthLargerThanTheFileIsRefused() throws Exception
    {
        byte[] bytes = smallModelFile();
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putLong(24, Long.MAX_VALUE);
        assertRefused(bytes, "metadata key 0 length at offset 24 is 9223372036854775807, more than the bytes left in the file");
    }

    @Test
    void aTensorOffsetOutsideTheDataSectionIsRefusedNamingTheTensor() throws Exception
    {
        byte[] bytes = new GgufWriter().tensor("ok", GgufTensorType.F32, new long[] {4}, new float[4])
                .rawTensor("far", GgufTensorType.F32.id(), new long[] {4}, new byte[0], 1L << 20).toBytes();
        assertRefused(bytes, "tensor 'far': 16 bytes of F32 at data offset 1048576 are not inside the data section of 16 bytes");
    }

    @Test
    void anUnknownTensorTypeIsRefusedNamingTheTensorTheTypeAndTheSupportedOnes() throws Exception
    {
        byte[] bytes = new GgufWriter().rawTensor("blk.0.attn_q.weight", 10, new long[] {256}, new byte[84], null).toBytes();
        assertRefused(bytes, "tensor 'blk.0.attn_q.weight' has ggml type 10 (Q2_K), which the engine does not read; "
                + "supported: F32 (0), F16 (1), Q4_0 (2), Q4_1 (3), Q5_0 (6), Q5_1 (7), Q8_0 (8), Q4_K (12), Q5_K (13), Q6_K (14), BF16 (30)");
    }

    @Test
    void fiveDimensionsAreRefused() throws Exception
    {
        byte[] bytes = new GgufWriter().rawTensor("t", 0, new long[] {1, 1, 1, 1, 1}, new byte[4], null).toBytes();
        assertRefused(bytes, "tensor 't' has 5 dimensions; GGUF tensors have 1 to 4");
    }

    @Test
    void arraysNestedDeeperThanTheLimitAreRefused() throws Exception
    {
        Object value = new GgufWriter.Array(GgufValueType.UINT8, List.of());
        for (int i = 0; i < GgufMetadataReader.MAX_ARRAY_DEPTH; i++) {
            value = new GgufWriter.Array(GgufValueType.ARRAY, List.of(value));
        }
        assertRefused(new GgufWriter().put("deep", GgufValueType.ARRAY, value).toBytes(), "metadata key 'deep' nests arrays more than 8 deep");
    }

    @Test
    void moreArrayElementsThanTheMetadataCapAreRefusedBeforeTheyAreRead() throws Exception
    {
        byte[] key = "big".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        long count = GgufMetadataReader.MAX_ARRAY_ELEMENTS + 1;
        ByteBuffer b = ByteBuffer.allocate(24 + 8 + key.length + 4 + 4 + 8 + (int) count).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(GgufFile.MAGIC).putInt(3).putLong(0).putLong(1).putLong(key.length).put(key)
                .putInt(GgufValueType.ARRAY.id()).putInt(GgufValueType.UINT8.id()).putLong(count);
        assertRefused(b.array(), "metadata key 'big' holds 8388609 array elements, more than the 8388608 the engine reads");
    }

    /**
     * Seeded single-byte corruptions and truncations of a valid file: each either opens (and then
     * every tensor converts and the model reads or is refused) or is refused with an
     * IllegalArgumentException naming the file; nothing else escapes.
     */
    @Test
    void corruptedBytesEitherOpenOrAreRefusedWithIllegalArgument()
    {
        byte[] valid = smallModelFile();
        Path label = Path.of("fuzz.gguf");
        SplittableRandom random = new SplittableRandom(20261201L);
        int opened = 0;
        int refused = 0;
        for (int round = 0; round < 4000; round++) {
            byte[] bytes;
            if (round % 4 == 3) {
                bytes = Arrays.copyOf(valid, random.nextInt(valid.length));
            }
            else {
                bytes = valid.clone();
                int at = random.nextInt(bytes.length);
                // favour the header, where every count and length lives
                if (round % 2 == 0) {
                    at = random.nextInt(Math.min(bytes.length, 600));
                }
                bytes[at] = (byte) (round % 8 == 0 ? 0xff : random.nextInt(256));
            }
            try (GgufFile file = GgufFile.parse(label, null, MemorySegment.ofArray(bytes))) {
                file.tensors().values().forEach(GgufTensor::toFloats);
                try {
                    GgufModel.read(file);
                    GgufTokenizerData.read(file);
                }
                catch (IllegalArgumentException e) {
                    assertThat(e.getMessage()).startsWith(label + ": ");
                }
                opened++;
            }
            catch (IllegalArgumentException e) {
                assertThat(e.getMessage()).as("round " + round).startsWith(label + ": ");
                refused++;
            }
        }
        assertThat(opened).isPositive();
        assertThat(refused).isPositive();
        assertThat(opened + refused).isEqualTo(4000);
    }

    private void assertRefused(byte[] bytes, String message) throws Exception
    {
        Path path = dir.resolve("bad.gguf");
        Files.write(path, bytes);
        assertThatThrownBy(() -> GgufFile.open(path).close()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith(path + ": " + message);
    }

    /** A small valid file with model and tokenizer metadata and one tensor of each supported type. */
    static byte[] smallModelFile()
    {
        float[] values = new float[64];
        for (int i = 0; i < values.length; i++) {
            values[i] = (i - 31) / 7f;
        }
        return new GgufWriter()
                .put(GgufArchitecture.KEY, GgufValueType.STRING, "llama")
                .put("llama.context_length", GgufValueType.UINT32, 128L)
                .put("llama.embedding_length", GgufValueType.UINT32, 32L)
                .put("llama.block_count", GgufValueType.UINT32, 1L)
                .put("llama.feed_forward_length", GgufValueType.UINT32, 64L)
                .put("llama.attention.head_count", GgufValueType.UINT32, 4L)
                .put("llama.attention.head_count_kv", GgufValueType.UINT32, 2L)
                .put("llama.attention.layer_norm_rms_epsilon", GgufValueType.FLOAT32, 1e-5f)
                .put("tokenizer.ggml.model", GgufValueType.STRING, "gpt2")
                .put("tokenizer.ggml.tokens", GgufValueType.ARRAY, new GgufWriter.Array(GgufValueType.STRING, List.of("a", "b", "ab")))
                .put("tokenizer.ggml.token_type", GgufValueType.ARRAY, new GgufWriter.Array(GgufValueType.INT32, List.of(1, 1, 1)))
                .put("tokenizer.ggml.bos_token_id", GgufValueType.UINT32, 0L)
                .tensor("f32", GgufTensorType.F32, new long[] {32, 2}, values)
                .tensor("f16", GgufTensorType.F16, new long[] {64}, values)
                .tensor("bf16", GgufTensorType.BF16, new long[] {16, 2, 2}, values)
                .tensor("q8", GgufTensorType.Q8_0, new long[] {32, 2}, values)
                .toBytes();
    }

    @Test
    void theSmallModelFileIsValid()
    {
        try (GgufFile file = GgufFile.parse(Path.of("small.gguf"), null, MemorySegment.ofArray(smallModelFile()))) {
            assertThat(file.tensors().keySet()).containsExactly("f32", "f16", "bf16", "q8");
            assertThat(GgufModel.read(file).config().kvHeads()).isEqualTo(2);
            assertThat(GgufTokenizerData.read(file).tokens()).containsExactly("a", "b", "ab");
            assertThat(Map.copyOf(file.metadata().values())).hasSize(12);
        }
    }
}
