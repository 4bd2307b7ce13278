package io.handoff.cluster;

import com.typesafe.config.ConfigFactory;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ClusterConfigTest
{
    private static ClusterConfig parse(String hocon)
    {
        return ClusterConfig.from(ConfigFactory.parseString(hocon).withFallback(ConfigFactory.parseResources("reference.conf")).resolve());
    }

    @Test
    void theDefaultsAreStaticDiscoveryWithEveryStoreSettingDocumented()
    {
        ClusterConfig config = parse("");
        assertThat(config.discovery()).isEqualTo(Discovery.STATIC);
        assertThat(config.memberId()).isEmpty();
        assertThat(config.etcd().prefix()).isEqualTo("/handoff/members/");
        assertThat(config.etcd().leaseTtl()).isEqualTo(Duration.ofSeconds(10));
        assertThat(config.kubernetes().labelSelector()).isEqualTo("app.kubernetes.io/part-of=handoff");
        assertThat(config.memberIdOr("h:1")).isEqualTo("h:1");
    }

    @Test
    void etcdEndpointsAreACommaSeparatedListOfUrls()
    {
        ClusterConfig config = parse("handoff.cluster { discovery = etcd, etcd.endpoints = \"http://10.0.0.2:2379, 10.0.0.3:2379\", member-id = p0 }");
        assertThat(config.discovery()).isEqualTo(Discovery.ETCD);
        assertThat(config.etcd().endpoints()).containsExactly(URI.create("http://10.0.0.2:2379"), URI.create("http://10.0.0.3:2379"));
        assertThat(config.memberIdOr("h:1")).isEqualTo("p0");
    }

    @Test
    void aConfigurationThatCannotWorkIsRefusedNamingTheKey()
    {
        assertThatThrownBy(() -> parse("handoff.cluster.discovery = etcd"))
                .hasMessageContaining("handoff.cluster.discovery = etcd needs handoff.cluster.etcd.endpoints");
        assertThatThrownBy(() -> parse("handoff.cluster.discovery = consul")).hasMessageContaining("expected static, etcd or kubernetes");
        assertThatThrownBy(() -> parse("handoff.cluster.etcd.endpoints = \"http://h\"")).hasMessageContaining("handoff.cluster.etcd.endpoints:");
        assertThatThrownBy(() -> parse("handoff.cluster.etcd.prefix = handoff")).hasMessageContaining("must start and end with '/'");
        assertThatThrownBy(() -> parse("handoff.cluster.etcd.lease-ttl = 1s")).hasMessageContaining("at least 2s");
    }
}
