package io.handoff.demo;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DemoSettingsTest
{
    private static DemoSettings settings(int prefills, int decodes, boolean standIns, Optional<String> model, Optional<Path> config)
    {
        Map<String, String> overrides = new LinkedHashMap<>();
        overrides.put("handoff.logging.level", "debug");
        overrides.put("handoff.kv.page-size", "32");
        return new DemoSettings(8, 0, 4, 2, prefills, decodes, "mori", model, Optional.of("aiter"), config, overrides, false, standIns,
                Duration.ofSeconds(5), Duration.ofSeconds(5), Duration.ofSeconds(5));
    }

    @Test
    void everyServerGetsTheConfigFileAndEveryOverride()
    {
        DemoSettings settings = settings(1, 1, false, Optional.of("tiny-gqa"), Optional.of(Path.of("/etc/my.conf")));
        DemoSettings.Plan plan = settings.plan(List.of(1001, 1002, 1003));
        List<String> config = List.of("--config", "/etc/my.conf", "-Dhandoff.logging.level=debug", "-Dhandoff.kv.page-size=32",
                "-Dhandoff.disaggregation.transfer-backend=mori", "-Dhandoff.model.name=tiny-gqa", "-Dhandoff.attention.backend=aiter");
        assertThat(settings.configArguments()).isEqualTo(config);
        NodeSpec prefill = plan.nodes(NodeSpec.Role.PREFILL).getFirst();
        NodeSpec decode = plan.nodes(NodeSpec.Role.DECODE).getFirst();
        NodeSpec router = plan.nodes(NodeSpec.Role.ROUTER).getFirst();
        assertThat(prefill.arguments()).startsWith("serve", "--role", "prefill", "--host", "127.0.0.1", "--port", "1001").endsWith(config.toArray(String[]::new));
        assertThat(decode.arguments()).startsWith("serve", "--role", "decode", "--host", "127.0.0.1", "--port", "1002").endsWith(config.toArray(String[]::new));
        assertThat(router.arguments()).startsWith("router", "--prefill", "http://127.0.0.1:1001", "--decode", "http://127.0.0.1:1002",
                "--port", "1003").endsWith(config.toArray(String[]::new));
        assertThat(plan.entry()).hasToString("http://127.0.0.1:1003");
    }

    @Test
    void theRouterStartsAfterThePrefillsAndDecodesItRoutesTo()
    {
        DemoSettings.Plan plan = settings(2, 3, false, Optional.empty(), Optional.empty()).plan(List.of(1, 2, 3, 4, 5, 6));
        assertThat(plan.stages()).hasSize(2);
        assertThat(plan.stages().get(0)).extracting(NodeSpec::name).containsExactly("prefill-0", "prefill-1", "decode-0", "decode-1", "decode-2");
        assertThat(plan.stages().get(1)).extracting(NodeSpec::name).containsExactly("router");
        assertThat(plan.stages().get(1).getFirst().arguments()).containsSubsequence("--prefill", "http://127.0.0.1:1", "--prefill", "http://127.0.0.1:2",
                "--decode", "http://127.0.0.1:3", "--decode", "http://127.0.0.1:4", "--decode", "http://127.0.0.1:5", "--port", "6");
    }

    @Test
    void withoutAModelOptionNoModelOverride()
    {
        assertThat(settings(1, 1, false, Optional.empty(), Optional.empty()).effectiveOverrides())
                .doesNotContainKey(DemoSettings.MODEL_KEY)
                .containsEntry(DemoSettings.TRANSFER_BACKEND_KEY, "mori")
                .containsEntry(DemoSettings.ATTENTION_KEY, "aiter");
    }

    @Test
    void standInsAreColocatedServersWithoutARouter()
    {
        DemoSettings settings = settings(1, 1, true, Optional.empty(), Optional.empty());
        assertThat(settings.servers()).isEqualTo(2);
        DemoSettings.Plan plan = settings.plan(List.of(1001, 1002));
        assertThat(plan.stages()).hasSize(1);
        assertThat(plan.stages().getFirst()).allSatisfy(node -> assertThat(node.arguments()).startsWith("serve", "--role", "colocated"));
        assertThat(plan.nodes(NodeSpec.Role.ROUTER)).isEmpty();
        assertThat(plan.entry()).hasToString("http://127.0.0.1:1002");
    }

    @Test
    void refusesNonsense()
    {
        assertThatThrownBy(() -> settings(0, 1, false, Optional.empty(), Optional.empty())).hasMessage("--prefill must be at least 1, got 0");
        assertThatThrownBy(() -> settings(1, 1, false, Optional.empty(), Optional.empty()).plan(List.of(1, 2)))
                .hasMessage("need 3 ports, got 2");
    }
}
