package io.handoff.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.handoff.http.base.StrictJson;

import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

import static java.util.Objects.requireNonNull;

/**
 * The few calls of the Kubernetes API that discovery makes (list pods, watch pods), with the pod's service account
 * for authentication: a bearer token read afresh for every call (projected tokens rotate) and the cluster's CA. What
 * the API answers is bounded in size before it is parsed.
 */
final class KubernetesApi
        implements Closeable
{
    static final Path SERVICE_ACCOUNT = Path.of("/var/run/secrets/kubernetes.io/serviceaccount");
    /** Largest pod list accepted (a few thousand pods). */
    static final int MAX_LIST_BYTES = 32 << 20;
    /** Largest single watch event accepted (one pod). */
    static final int MAX_EVENT_BYTES = 1 << 20;
    private static final int MAX_TOKEN_BYTES = 16 << 10;
    private static final int MAX_CA_BYTES = 1 << 20;
    private static final int MAX_ERROR_EXCERPT = 300;
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(10);
    private static final Pattern NAMESPACE = Pattern.compile("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");
    private static final Pattern BEARER = Pattern.compile("[\\x21-\\x7e]{1," + MAX_TOKEN_BYTES + "}");
    static final ObjectMapper MAPPER = StrictJson.mapper(64);

    /** An answer other than 200; {@code status} 410 means the resource version asked for is gone. */
    static final class ApiFailure
            extends IOException
    {
        final int status;

        ApiFailure(int status, String message)
        {
            super(message);
            this.status = status;
        }
    }

    private final URI server;
    private final String namespace;
    private final String labelSelector;
    private final Optional<Path> tokenFile;
    private final HttpClient client;

    private KubernetesApi(URI server, String namespace, String labelSelector, Optional<Path> tokenFile, HttpClient client)
    {
        this.server = server;
        this.namespace = namespace;
        this.labelSelector = labelSelector;
        this.tokenFile = tokenFile;
        this.client = client;
    }

    /**
     * The API as {@code config} names it, each empty setting taken from the pod's environment ({@code env}) and its
     * service account folder ({@code serviceAccount}).
     *
     * @throws IOException when a setting is missing or a file it names cannot be used; the message says which
     */
    static KubernetesApi open(ClusterConfig.Kubernetes config, Map<String, String> env, Path serviceAccount)
            throws IOException
    {
        requireNonNull(config, "config is null");
        URI server = server(config.apiServer(), env);
        String namespace = namespace(config.namespace(), serviceAccount);
        if (config.labelSelector().isBlank() || config.labelSelector().length() > 1000) {
            throw new IOException("handoff.cluster.kubernetes.label-selector must be a label selector of up to 1000 characters, e.g. app.kubernetes.io/part-of=handoff");
        }
        Optional<Path> tokenFile = configuredFile(config.tokenFile(), serviceAccount.resolve("token"), "token-file");
        HttpClient.Builder client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(CALL_TIMEOUT)
                .followRedirects(HttpClient.Redirect.NEVER);
        if (server.getScheme().equals("https")) {
            Optional<Path> caFile = configuredFile(config.caFile(), serviceAccount.resolve("ca.crt"), "ca-file");
            if (caFile.isPresent()) {
                client.sslContext(trusting(caFile.get()));
            }
        }
        KubernetesApi api = new KubernetesApi(server, namespace, config.labelSelector(), tokenFile, client.build());
        api.bearer();
        return api;
    }

    String describe()
    {
        return server + " namespace " + namespace + " pods " + labelSelector;
    }

    /** The pods the label selector picks: a {@code PodList}. */
    JsonNode listPods()
            throws IOException, InterruptedException
    {
        HttpResponse<InputStream> response = send(podsUrl(""));
        try (InputStream body = response.body()) {
            byte[] bytes = body.readNBytes(MAX_LIST_BYTES + 1);
            if (bytes.length > MAX_LIST_BYTES) {
                throw new IOException("the pod list from " + server + " is larger than " + MAX_LIST_BYTES + " bytes: narrow handoff.cluster.kubernetes.label-selector");
            }
            return parse(bytes, "pod list");
        }
    }

    /** A watch of the pods the label selector picks, from {@code resourceVersion} on. */
    Watch watchPods(String resourceVersion)
            throws IOException, InterruptedException
    {
        String query = "&watch=true&resourceVersion=" + URLEncoder.encode(resourceVersion, StandardCharsets.UTF_8) + "&allowWatchBookmarks=true";
        return new Watch(send(podsUrl(query)).body());
    }

    /** Aborts every call in progress; a watch being read ends with an {@link IOException}. */
    @Override
    public void close()
    {
        client.shutdownNow();
    }

    /** The events of one watch, one JSON object a line, until the API ends the stream. */
    static final class Watch
            implements Closeable
    {
        private final InputStream body;
        private final ByteArrayOutputStream line = new ByteArrayOutputStream();

        private Watch(InputStream body)
        {
            this.body = body;
        }

        /** The next event, or empty when the API ended the watch. */
        Optional<JsonNode> next()
                throws IOException
        {
            line.reset();
            while (true) {
                int b = body.read();
                if (b < 0 || b == '\n') {
                    if (line.size() > 0 && !line.toString(StandardCharsets.UTF_8).isBlank()) {
                        return Optional.of(parse(line.toByteArray(), "watch event"));
                    }
                    if (b < 0) {
                        return Optional.empty();
                    }
                    continue;
                }
                if (line.size() >= MAX_EVENT_BYTES) {
                    throw new IOException("a watch event is longer than " + MAX_EVENT_BYTES + " bytes");
                }
                line.write(b);
            }
        }

        @Override
        public void close()
                throws IOException
        {
            body.close();
        }
    }

    private URI podsUrl(String extraQuery)
    {
        return URI.create(server + "/api/v1/namespaces/" + namespace + "/pods?labelSelector="
                + URLEncoder.encode(labelSelector, StandardCharsets.UTF_8) + extraQuery);
    }

    private HttpResponse<InputStream> send(URI url)
            throws IOException, InterruptedException
    {
        HttpRequest.Builder request = HttpRequest.newBuilder(url).timeout(CALL_TIMEOUT).header("Accept", "application/json").GET();
        bearer().ifPresent(token -> request.header("Authorization", "Bearer " + token));
        HttpResponse<InputStream> response = client.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
        if (response.statusCode() != 200) {
            String excerpt;
            try (InputStream body = response.body()) {
                excerpt = printable(new String(body.readNBytes(MAX_ERROR_EXCERPT), StandardCharsets.UTF_8));
            }
            String hint = response.statusCode() == 401 || response.statusCode() == 403
                    ? " (the service account needs get, list and watch on pods in namespace " + namespace + ": see deploy/kubernetes/base/rbac.yaml)" : "";
            throw new ApiFailure(response.statusCode(), "Kubernetes API " + url.getPath() + " answered HTTP " + response.statusCode() + hint + ": " + excerpt);
        }
        return response;
    }

    private Optional<String> bearer()
            throws IOException
    {
        if (tokenFile.isEmpty()) {
            return Optional.empty();
        }
        String token = new String(readBounded(tokenFile.get(), MAX_TOKEN_BYTES, "token-file"), StandardCharsets.UTF_8).strip();
        if (!BEARER.matcher(token).matches()) {
            throw new IOException("handoff.cluster.kubernetes.token-file " + tokenFile.get() + " does not hold a bearer token (printable characters, no spaces)");
        }
        return Optional.of(token);
    }

    static URI server(String configured, Map<String, String> env)
            throws IOException
    {
        String given = configured.strip();
        if (given.isEmpty()) {
            String host = env.getOrDefault("KUBERNETES_SERVICE_HOST", "").strip();
            String port = env.getOrDefault("KUBERNETES_SERVICE_PORT", "").strip();
            if (host.isEmpty() || port.isEmpty()) {
                throw new IOException("handoff.cluster.kubernetes.api-server is empty and KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are not set "
                        + "(not running in a pod?): set api-server, e.g. https://10.96.0.1:443");
            }
            given = "https://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
        }
        try {
            return Member.httpAddress(URI.create(given));
        }
        catch (IllegalArgumentException e) {
            throw new IOException("handoff.cluster.kubernetes.api-server: " + e.getMessage());
        }
    }

    static String namespace(String configured, Path serviceAccount)
            throws IOException
    {
        String namespace = configured.strip();
        if (namespace.isEmpty()) {
            Path file = serviceAccount.resolve("namespace");
            if (!Files.isRegularFile(file)) {
                throw new IOException("handoff.cluster.kubernetes.namespace is empty and there is no service account namespace file " + file + ": set namespace");
            }
            namespace = new String(readBounded(file, 256, "namespace file"), StandardCharsets.UTF_8).strip();
        }
        if (!NAMESPACE.matcher(namespace).matches()) {
            throw new IOException("Kubernetes namespace '" + printable(namespace) + "' is not a DNS label (lower-case letters, digits, '-', at most 63)");
        }
        return namespace;
    }

    /** {@code configured} when set (it must exist); else {@code fallback} when it exists; else none. */
    private static Optional<Path> configuredFile(String configured, Path fallback, String key)
            throws IOException
    {
        if (!configured.isBlank()) {
            Path file = Path.of(configured.strip());
            if (!Files.isRegularFile(file)) {
                throw new IOException("handoff.cluster.kubernetes." + key + " " + file + " is not a readable file");
            }
            return Optional.of(file);
        }
        return Files.isRegularFile(fallback) ? Optional.of(fallback) : Optional.empty();
    }

    private static SSLContext trusting(Path caFile)
            throws IOException
    {
        try (InputStream in = new java.io.ByteArrayInputStream(readBounded(caFile, MAX_CA_BYTES, "ca-file"))) {
            Collection<? extends Certificate> certificates = CertificateFactory.getInstance("X.509").generateCertificates(in);
            if (certificates.isEmpty()) {
                throw new IOException("handoff.cluster.kubernetes.ca-file " + caFile + " holds no PEM certificate");
            }
            KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
            trust.load(null, null);
            int i = 0;
            for (Certificate certificate : certificates) {
                trust.setCertificateEntry("ca-" + i++, certificate);
            }
            TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            factory.init(trust);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, factory.getTrustManagers(), null);
            return context;
        }
        catch (GeneralSecurityException e) {
            throw new IOException("handoff.cluster.kubernetes.ca-file " + caFile + " is not a PEM CA bundle: " + e.getMessage(), e);
        }
    }

    private static byte[] readBounded(Path file, int limit, String what)
            throws IOException
    {
        try (InputStream in = Files.newInputStream(file)) {
            byte[] bytes = in.readNBytes(limit + 1);
            if (bytes.length > limit) {
                throw new IOException(what + " " + file + " is larger than " + limit + " bytes");
            }
            return bytes;
        }
    }

    private static JsonNode parse(byte[] bytes, String what)
            throws IOException
    {
        try {
            JsonNode node = MAPPER.readTree(bytes);
            if (node == null || !node.isObject()) {
                throw new IOException("the Kubernetes API sent a " + what + " that is not a JSON object");
            }
            return node;
        }
        catch (com.fasterxml.jackson.core.JacksonException e) {
            throw new IOException("the Kubernetes API sent a " + what + " that is not JSON: " + e.getOriginalMessage());
        }
    }

    static String printable(String text)
    {
        String clean = text.codePoints().limit(MAX_ERROR_EXCERPT).map(c -> c < 0x20 || c == 0x7f ? ' ' : c)
                .collect(StringBuilder::new, StringBuilder::appendCodePoint, StringBuilder::append).toString().strip();
        return text.length() > MAX_ERROR_EXCERPT ? clean + "..." : clean;
    }
}
