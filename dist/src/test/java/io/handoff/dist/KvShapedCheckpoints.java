package io.handoff.dist;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.json.JsonFile;
import io.handoff.core.model.DeepseekConfig;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.SyntheticWeights;
import io.handoff.core.model.hf.DeepseekHfConfig;
import io.handoff.core.model.hf.HfModelConfig;
import io.handoff.core.model.hf.SafetensorsWeights;
import io.handoff.core.model.hf.TensorDtype;
import io.handoff.testkit.model.SafetensorsEncoder;
import io.handoff.testkit.model.SeededCheckpoint;
import io.handoff.testkit.model.SeededDeepseekCheckpoint;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.SequencedMap;
import java.util.function.Consumer;

/**
 * The seeded checkpoints with a real model's KV widths and small everything else: a seeded directory is written, its
 * config.json given the widths, read back by the engine's own config reader, and its weights rewritten for that shape.
 * What one token's KV costs depends on those widths and the layer count only, so these serve to measure it.
 */
final class KvShapedCheckpoints
{
    private static final ObjectMapper JSON = new ObjectMapper();

    private KvShapedCheckpoints() {}

    /** A DeepSeek-V2 checkpoint whose MLA caches DeepSeek-V2/V3's latent: kv_lora_rank 512 and a 64-wide rope key. */
    static DeepseekConfig deepseekLatent(Path directory, long seed, int layers)
            throws IOException
    {
        SeededDeepseekCheckpoint.write(directory, SeededDeepseekCheckpoint.Options.v2(seed));
        patchConfig(directory, config -> config.put("num_hidden_layers", layers).put("kv_lora_rank", 512).put("qk_rope_head_dim", 64)
                .put("qk_nope_head_dim", 128).put("v_head_dim", 128).put("num_attention_heads", 2).put("num_key_value_heads", 2));
        Path file = directory.resolve(HfModelConfig.FILE);
        DeepseekConfig config = DeepseekHfConfig.parse(JsonFile.readObject(file, HfModelConfig.MAX_CONFIG_BYTES), file.toString());
        SequencedMap<String, SeededDeepseekCheckpoint.Tensor> tensors = SeededDeepseekCheckpoint.tensors(config, seed);
        SequencedMap<String, int[]> shapes = new LinkedHashMap<>();
        tensors.forEach((name, tensor) -> shapes.put(name, tensor.shape()));
        Files.write(directory.resolve(SafetensorsWeights.SINGLE_FILE),
                SafetensorsEncoder.encode(shapes, (name, shape) -> tensors.get(name).values(), TensorDtype.F32));
        return config;
    }

    /** A Llama checkpoint whose grouped-query attention caches 8 KV heads of 128, as Llama-3-8B's does. */
    static ModelConfig llamaGqa(Path directory, long seed, int layers)
            throws IOException
    {
        SeededCheckpoint.write(directory, seed, false);
        patchConfig(directory, config -> config.put("num_hidden_layers", layers).put("num_attention_heads", 8).put("num_key_value_heads", 8)
                .put("head_dim", 128));
        ModelConfig config = HfModelConfig.read(directory).toModelConfig(directory.getFileName().toString());
        SyntheticWeights weights = new SyntheticWeights(seed);
        Files.write(directory.resolve(SafetensorsWeights.SINGLE_FILE),
                SafetensorsEncoder.encode(SeededCheckpoint.tensorShapes(config), weights::floats, TensorDtype.F32));
        return config;
    }

    private static void patchConfig(Path directory, Consumer<ObjectNode> change)
            throws IOException
    {
        Path file = directory.resolve(HfModelConfig.FILE);
        ObjectNode config = (ObjectNode) JSON.readTree(file.toFile());
        change.accept(config);
        Files.writeString(file, JSON.writeValueAsString(config));
    }
}
