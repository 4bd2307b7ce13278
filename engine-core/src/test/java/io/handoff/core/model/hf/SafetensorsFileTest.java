package io.handoff.core.model.hf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static io.handoff.core.model.hf.SafetensorsWriter.entry;
import static io.handoff.core.model.hf.SafetensorsWriter.floatsLittleEndian;
import static io.handoff.core.model.hf.SafetensorsWriter.writeRaw;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SafetensorsFileTest
{
    @TempDir
    Path dir;

    private Path file()
    {
        return dir.resolve("model.safetensors");
    }

    @Test
    void exposesEachTensorsDtypeShapeAndValuesAndTheMetadata()
    {
        SafetensorsWriter.write(file(), List.of(
                new SafetensorsWriter.Tensor("a", new int[] {2, 3}, new float[] {1, 2, 3, 4, 5, 6}),
                new SafetensorsWriter.Tensor("b", new int[] {2}, new float[] {-0.5f, 7})), TensorDtype.F32);

        try (SafetensorsFile file = SafetensorsFile.open(file())) {
            assertThat(file.metadata()).isEqualTo(Map.of("format", "pt"));
            assertThat(file.tensors().keySet()).containsExactly("a", "b");
            SafetensorsTensor a = file.tensor("a").orElseThrow();
            assertThat(a.dtype()).isEqualTo(TensorDtype.F32);
            assertThat(a.shape()).containsExactly(2, 3);
            assertThat(a.data().byteSize()).isEqualTo(24);
            assertThat(a.toFloats()).containsExactly(1, 2, 3, 4, 5, 6);
            assertThat(file.tensor("b").orElseThrow().toFloats()).containsExactly(-0.5f, 7);
            assertThat(file.tensor("c")).isEmpty();
        }
    }

    @Test
    void readsF32FromADataSectionThatIsNotFourByteAligned()
    {
        String header = "{" + entry("x", "F32", new int[] {3}, 0, 12) + "}";
        assertThat(header.length() % 4).isNotZero();
        writeRaw(file(), header, floatsLittleEndian(1.25f, -3f, Float.MIN_VALUE));

        try (SafetensorsFile file = SafetensorsFile.open(file())) {
            assertThat(file.tensor("x").orElseThrow().toFloats()).containsExactly(1.25f, -3f, Float.MIN_VALUE);
        }
    }

    @Test
    void bf16IsTheHighHalfOfAnF32AndF16IsIeeeHalf()
    {
        // BF16 0x3F80 = 1.0, 0xC049 = -3.140625, 0x0001 = the smallest BF16 subnormal; F16 0x3C00 = 1.0, 0xC248 = -3.140625, 0x0001 = 2^-24
        ByteBuffer data = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
        data.putShort((short) 0x3F80).putShort((short) 0xC049).putShort((short) 0x0001);
        data.putShort((short) 0x3C00).putShort((short) 0xC248).putShort((short) 0x0001);
        writeRaw(file(), "{" + entry("b", "BF16", new int[] {3}, 0, 6) + "," + entry("h", "F16", new int[] {3}, 6, 12) + "}", data.array());

        try (SafetensorsFile file = SafetensorsFile.open(file())) {
            assertThat(file.tensor("b").orElseThrow().toFloats()).containsExactly(1f, -3.140625f, Float.intBitsToFloat(0x00010000));
            assertThat(file.tensor("h").orElseThrow().toFloats()).containsExactly(1f, -3.140625f, (float) Math.scalb(1.0, -24));
        }
    }

    @Test
    void aFileShorterThanTheLengthFieldIsRefused()
    {
        SafetensorsWriter.writeBytes(file(), new byte[] {1, 2, 3});

        assertThatThrownBy(() -> SafetensorsFile.open(file()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(file() + ": 3 bytes is too short for a safetensors file (it starts with an 8-byte header length);"
                        + " the file is truncated or not safetensors");
    }

    @Test
    void aFileTruncatedInsideTheDataIsRefusedNamingTheTensor()
    {
        writeRaw(file(), "{" + entry("w", "F32", new int[] {4}, 0, 16) + "}", floatsLittleEndian(1, 2, 3));

        assertThatThrownBy(() -> SafetensorsFile.open(file()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(file() + ": tensor 'w': data_offsets [0, 16] are not inside the data section of 12 bytes;"
                        + " the file is truncated or corrupt");
    }

    @Test
    void aFileTruncatedInsideTheHeaderIsRefused()
    {
        String header = "{" + entry("w", "F32", new int[] {1}, 0, 4) + "}";
        byte[] cut = Arrays.copyOf(header.getBytes(StandardCharsets.UTF_8), 20);
        writeRaw(file(), header.length(), cut, new byte[0]);

        assertThatThrownBy(() -> SafetensorsFile.open(file()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith(file() + ": header length " + header.length() + " is impossible: it must be at least 2, at most the 20 bytes");
    }

    @Test
    void aHeaderLengthLargerThanTheFileIsRefusedWithoutAllocatingIt()
    {
        writeRaw(file(), 1L << 62, "{}".getBytes(StandardCharsets.UTF_8), new byte[0]);
        assertThatThrownBy(() -> SafetensorsFile.open(file()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(file() + ": header length 4611686018427387904 is impossible");

        writeRaw(file(), -1L, "{}".getBytes(StandardCharsets.UTF_8), new byte[0]);
        assertThatThrownBy(() -> SafetensorsFile.open(file()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(file() + ": header length 18446744073709551615 is impossible");
    }

    @Test
    void dataOffsetsOutsideTheDataSectionAreRefused()
    {
        writeRaw(file(), "{" + entry("w", "F32", new int[] {1}, 8, 12) + "}", floatsLittleEndian(1, 2));
        assertThatThrownBy(() -> SafetensorsFile.open(file()))
                .hasMessage(file() + ": tensor 'w': data_offsets [8, 12] are not inside the data section of 8 bytes; the file is truncated or corrupt");

        writeRaw(file(), "{" + entry("w", "F32", new int[] {1}, 4, 0) + "}", floatsLittleEndian(1, 2));
        assertThatThrownBy(() -> SafetensorsFile.open(file()))
                .hasMessageContaining("data_offsets [4, 0] are not inside the data section");

        writeRaw(file(), "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", floatsLittleEndian(1));
        assertThatThrownBy(() -> SafetensorsFile.open(file()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(file() + ": tensor 'w': data_offsets must be [begin, end], two non-negative integers, was [-4, 0]");
    }

    @Test
    void dataOffsetsThatDoNotMatchTheShapeAreRefused()
    {
        writeRaw(file(), "{" + entry("w", "BF16", new int[] {2, 3}, 0, 8) + "}", new byte[16]);

        assertThatThrownBy(() -> SafetensorsFile.open(file()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(file() + ": tensor 'w': data_offsets [0, 8] hold 8 bytes, but shape [2, 3] of BF16 needs 12");
    }

    @Test
    void overlappingTensorsAreRefused()
    {
        writeRaw(file(), "{" + entry("a", "F32", new int[] {2}, 0, 8) + "," + entry("b", "F32", new int[] {2}, 4, 12) + "}",
                floatsLittleEndian(1, 2, 3));

        assertThatThrownBy(() -> SafetensorsFile.open(file()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(file() + ": tensors 'a' and 'b' overlap in the data section (one ends at 8, the other begins at 4); the file is corrupt");
    }

    @Test
    void anUnsupportedDtypeIsRefusedNamingTheTensorTheDtypeAndTheSupportedOnes()
    {
        writeRaw(file(), "{" + entry("model.layers.0.mlp.up_proj.weight", "I8", new int[] {4}, 0, 4) + "}", new byte[4]);

        assertThatThrownBy(() -> SafetensorsFile.open(file()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(file() + ": tensor 'model.layers.0.mlp.up_proj.weight' has dtype I8, which the engine does not read;"
                        + " supported: F32, F16, BF16, F8_E4M3 (convert the checkpoint, e.g. save it in bfloat16)");
    }

    @Test
    void shapesMustBeNonNegativeIntegers()
    {
        writeRaw(file(), "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,-1],\"data_offsets\":[0,0]}}", new byte[0]);
        assertThatThrownBy(() -> SafetensorsFile.open(file()))
                .hasMessage(file() + ": tensor 'w': shape [2, -1] must hold integers from 0 to 2147483647; dimension 1 is -1");

        writeRaw(file(), "{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,0]}}", new byte[0]);
        assertThatThrownBy(() -> SafetensorsFile.open(file())).hasMessageContaining("dimension 0 is 1.5");

        writeRaw(file(), "{\"w\":{\"dtype\":\"F32\",\"shape\":[2147483647,2147483647,2147483647],\"data_offsets\":[0,0]}}", new byte[0]);
        assertThatThrownBy(() -> SafetensorsFile.open(file())).hasMessageContaining("has too many elements");
    }

    @Test
    void anEmptyTensorIsAllowed()
    {
        writeRaw(file(), "{" + entry("e", "F16", new int[] {0, 8}, 0, 0) + "}", new byte[0]);

        try (SafetensorsFile file = SafetensorsFile.open(file())) {
            assertThat(file.tensor("e").orElseThrow().toFloats()).isEmpty();
        }
    }

    @Test
    void entriesWithMissingOrExtraFieldsAreRefused()
    {
        writeRaw(file(), "{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", new byte[4]);
        assertThatThrownBy(() -> SafetensorsFile.open(file()))
                .hasMessage(file() + ": tensor 'w' has fields [dtype, shape]; a safetensors entry has exactly dtype, shape and data_offsets");

        writeRaw(file(), "{\"__metadata__\":{\"format\":1}}", new byte[0]);
        assertThatThrownBy(() -> SafetensorsFile.open(file()))
                .hasMessage(file() + ": __metadata__ entry 'format' must be a string, was the number 1");
    }

    @Test
    void aHeaderThatIsNotJsonIsRefusedWithTheOffset()
    {
        writeRaw(file(), "{\"w\": oops}", new byte[0]);

        assertThatThrownBy(() -> SafetensorsFile.open(file()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(file() + " (safetensors header): invalid JSON at offset 6: expected a value, found 'o'");
    }

    @Test
    void corruptedOrTruncatedFilesFailOnlyWithAnErrorNamingTheFile()
            throws Exception
    {
        SafetensorsWriter.write(file(), List.of(
                new SafetensorsWriter.Tensor("a", new int[] {2, 3}, new float[] {1, 2, 3, 4, 5, 6}),
                new SafetensorsWriter.Tensor("b", new int[] {4}, new float[] {7, 8, 9, 10})), TensorDtype.BF16);
        byte[] valid = Files.readAllBytes(file());
        SplittableRandom random = new SplittableRandom(20240601L);
        int opened = 0;
        int refused = 0;
        for (int trial = 0; trial < 2000; trial++) {
            byte[] bytes = trial % 4 == 0
                    ? Arrays.copyOf(valid, random.nextInt(valid.length))
                    : valid.clone();
            if (trial % 4 != 0) {
                for (int flips = 1 + random.nextInt(3); flips > 0; flips--) {
                    bytes[random.nextInt(bytes.length)] = (byte) random.nextInt(256);
                }
            }
            SafetensorsWriter.writeBytes(file(), bytes);
            try (SafetensorsFile file = SafetensorsFile.open(file())) {
                file.tensors().values().forEach(t -> assertThat(t.toFloats()).hasSize((int) t.elements()));
                opened++;
            }
            catch (IllegalArgumentException e) {
                assertThat(e.getMessage()).as("trial " + trial).startsWith(file().toString());
                refused++;
            }
        }
        // both outcomes occur: flipped data bytes still open, flipped header bytes and truncations do not
        assertThat(opened).isPositive();
        assertThat(refused).isPositive();
        assertThat(opened + refused).isEqualTo(2000);
    }
}
