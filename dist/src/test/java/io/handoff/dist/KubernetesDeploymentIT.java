package io.handoff.dist;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What deploy/ takes from the built distribution, checked without Docker or a cluster (neither is here): the tarball
 * the Dockerfile copies exists and unpacks to the layout its entrypoint needs, and the ConfigMap's handoff.conf is a
 * configuration the distribution accepts with no unknown key. (engine-cluster's KubernetesManifestsTest checks the
 * manifests themselves.)
 */
class KubernetesDeploymentIT
{
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Path TARBALL = Path.of(System.getProperty("handoff.dist.tarball", "target/handoff-" + Launcher.VERSION + "-bin.tar.gz"));

    @TempDir
    Path temp;

    @Test
    void theDockerfileCopiesTheBuiltTarballWhoseLayoutHoldsTheEntrypoint()
            throws Exception
    {
        String dockerfile = Files.readString(ROOT.resolve("deploy/container/Dockerfile"));
        Matcher copy = Pattern.compile("(?m)^COPY (\\S+) ").matcher(dockerfile);
        assertThat(copy.find()).as("the Dockerfile has a COPY").isTrue();
        PathMatcher source = FileSystems.getDefault().getPathMatcher("glob:" + ROOT.resolve(copy.group(1)));
        try (Stream<Path> built = Files.list(TARBALL.toAbsolutePath().getParent())) {
            assertThat(built.filter(source::matches).toList()).as("files the COPY picks").containsExactly(TARBALL.toAbsolutePath());
        }
        assertThat(dockerfile).contains("-C /opt/handoff --strip-components=1", "ENTRYPOINT [\"/opt/handoff/bin/handoff\"]", "USER 10001");

        List<String> entries = tarEntries(TARBALL);
        String top = "handoff-" + Launcher.VERSION + "/";
        assertThat(entries).allMatch(entry -> entry.startsWith(top), "one top folder, which --strip-components=1 removes");
        assertThat(entries).contains(top + "bin/handoff", top + "conf/handoff.conf");
        assertThat(entries).anyMatch(entry -> entry.startsWith(top + "lib/handoff-cli-") && entry.endsWith(".jar"));
        assertThat(entries).anyMatch(entry -> entry.startsWith(top + "lib/handoff-engine-cluster-") && entry.endsWith(".jar"));
    }

    @Test
    void theConfigMapsConfigurationIsAcceptedWithKubernetesDiscoveryAndNoUnknownKey()
            throws Exception
    {
        Path conf = Files.writeString(temp.resolve("handoff.conf"), blockScalar(ROOT.resolve("deploy/kubernetes/base/configmap.yaml"), "handoff.conf"));

        Launcher.Run run = Launcher.run(temp, "config", "--config", conf.toString());

        assertThat(run.exitCode()).as(run.describe()).isZero();
        assertThat(run.stdout() + run.stderr()).as(run.describe()).doesNotContain("unknown configuration key");
        assertThat(run.stdout()).containsPattern("handoff.cluster.discovery = \"kubernetes\" +# .*handoff.conf");
        assertThat(run.stdout()).containsPattern("handoff.security.cluster-secret-file = \"/run/handoff/cluster.secret\"");
    }

    /** The literal block scalar {@code key: |} of a YAML file, its indentation removed. */
    private static String blockScalar(Path yaml, String key)
            throws IOException
    {
        List<String> lines = Files.readAllLines(yaml);
        int start = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).strip().equals(key + ": |")) {
                start = i + 1;
            }
        }
        assertThat(start).as(yaml + " has '" + key + ": |'").isPositive();
        int indent = lines.get(start).length() - lines.get(start).stripLeading().length();
        StringBuilder text = new StringBuilder();
        for (int i = start; i < lines.size(); i++) {
            String line = lines.get(i);
            if (!line.isBlank() && line.length() - line.stripLeading().length() < indent) {
                break;
            }
            text.append(line.isBlank() ? "" : line.substring(indent)).append('\n');
        }
        return text.toString();
    }

    /** The entry names of a .tar.gz (ustar headers: a 512-byte header, then the content rounded up to 512). */
    private static List<String> tarEntries(Path tarball)
            throws IOException
    {
        List<String> names = new ArrayList<>();
        try (InputStream in = new GZIPInputStream(Files.newInputStream(tarball))) {
            byte[] header = new byte[512];
            while (in.readNBytes(header, 0, 512) == 512 && header[0] != 0) {
                String name = field(header, 0, 100);
                String prefix = field(header, 345, 155);
                long size = Long.parseLong(field(header, 124, 12).strip().isEmpty() ? "0" : field(header, 124, 12).strip(), 8);
                if (header[156] == 'L') {
                    name = new String(in.readNBytes((int) size), java.nio.charset.StandardCharsets.UTF_8).replace("\0", "");
                    in.skipNBytes((512 - size % 512) % 512);
                    in.readNBytes(header, 0, 512);
                    size = Long.parseLong(field(header, 124, 12).strip(), 8);
                }
                else if (!prefix.isEmpty()) {
                    name = prefix + "/" + name;
                }
                names.add(name);
                in.skipNBytes(size + (512 - size % 512) % 512);
            }
        }
        return names;
    }

    private static String field(byte[] header, int offset, int length)
    {
        int end = offset;
        while (end < offset + length && header[end] != 0) {
            end++;
        }
        return new String(header, offset, end - offset, java.nio.charset.StandardCharsets.US_ASCII);
    }
}
