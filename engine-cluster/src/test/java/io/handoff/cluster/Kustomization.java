package io.handoff.cluster;

import tools.jackson.databind.ObjectMapper;
import tools.jackson.dataformat.yaml.YAMLMapper;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Renders a kustomization the way {@code kustomize build} does for the part of kustomize that deploy/kubernetes uses,
 * and refuses the rest: {@code resources} (files and directories with a kustomization) and {@code patches} given by
 * {@code path}, each a strategic-merge patch of maps and scalars naming its target by apiVersion, kind, name and
 * namespace. A patch holding a list, or any other kustomization field, fails the rendering: this renderer does not
 * implement strategic merge of lists, and must not pretend to.
 */
final class Kustomization
{
    private static final ObjectMapper YAML = YAMLMapper.builder().build();
    private static final Set<String> FIELDS = Set.of("apiVersion", "kind", "resources", "patches");

    private Kustomization() {}

    /** Every object the kustomization in {@code directory} renders, in order. */
    static List<Map<String, Object>> render(Path directory)
            throws IOException
    {
        Map<String, Object> kustomization = single(directory.resolve("kustomization.yaml"));
        for (String field : kustomization.keySet()) {
            if (!FIELDS.contains(field)) {
                throw new IllegalArgumentException(directory + "/kustomization.yaml uses '" + field + "', which this renderer does not implement");
            }
        }
        List<Map<String, Object>> objects = new ArrayList<>();
        for (Object resource : list(kustomization.getOrDefault("resources", List.of()), "resources")) {
            Path path = directory.resolve((String) resource).normalize();
            if (Files.isDirectory(path)) {
                objects.addAll(render(path));
            }
            else {
                objects.addAll(documents(path));
            }
        }
        for (Object entry : list(kustomization.getOrDefault("patches", List.of()), "patches")) {
            Map<String, Object> patch = map(entry, "patches entry");
            if (!patch.keySet().equals(Set.of("path"))) {
                throw new IllegalArgumentException(directory + ": a patch other than {path: FILE} is not implemented: " + patch);
            }
            apply(objects, single(directory.resolve((String) patch.get("path"))), directory.resolve((String) patch.get("path")));
        }
        return objects;
    }

    private static void apply(List<Map<String, Object>> objects, Map<String, Object> patch, Path file)
    {
        List<Map<String, Object>> targets = objects.stream().filter(object -> sameObject(object, patch)).toList();
        if (targets.size() != 1) {
            throw new IllegalArgumentException(file + " targets " + targets.size() + " objects; a patch must name exactly one");
        }
        merge(targets.getFirst(), patch, file.toString());
    }

    @SuppressWarnings("unchecked")
    private static void merge(Map<String, Object> target, Map<String, Object> patch, String where)
    {
        for (Map.Entry<String, Object> entry : patch.entrySet()) {
            Object value = entry.getValue();
            if (value instanceof List<?>) {
                throw new IllegalArgumentException(where + ": patching the list '" + entry.getKey() + "' needs strategic merge of lists, not implemented");
            }
            if (value instanceof Map<?, ?> nested && target.get(entry.getKey()) instanceof Map<?, ?> existing) {
                merge((Map<String, Object>) existing, (Map<String, Object>) nested, where + "." + entry.getKey());
            }
            else {
                target.put(entry.getKey(), value);
            }
        }
    }

    private static boolean sameObject(Map<String, Object> object, Map<String, Object> patch)
    {
        Map<String, Object> a = map(object.get("metadata"), "metadata");
        Map<String, Object> b = map(patch.get("metadata"), "metadata");
        return Objects.equals(object.get("apiVersion"), patch.get("apiVersion")) && Objects.equals(object.get("kind"), patch.get("kind"))
                && Objects.equals(a.get("name"), b.get("name")) && Objects.equals(a.get("namespace"), b.get("namespace"));
    }

    /** The YAML documents of {@code file}, each a map. */
    static List<Map<String, Object>> documents(Path file)
            throws IOException
    {
        List<Map<String, Object>> documents = new ArrayList<>();
        for (Object document : YAML.readerFor(Object.class).readValues(Files.readString(file)).readAll()) {
            if (document != null) {
                documents.add(new LinkedHashMap<>(map(document, file.toString())));
            }
        }
        return documents;
    }

    private static Map<String, Object> single(Path file)
            throws IOException
    {
        List<Map<String, Object>> documents = documents(file);
        if (documents.size() != 1) {
            throw new IllegalArgumentException(file + " holds " + documents.size() + " documents, expected one");
        }
        return documents.getFirst();
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object value, String what)
    {
        if (!(value instanceof Map<?, ?> map)) {
            throw new IllegalArgumentException(what + " is not a map: " + value);
        }
        return (Map<String, Object>) map;
    }

    static List<?> list(Object value, String what)
    {
        if (!(value instanceof List<?> list)) {
            throw new IllegalArgumentException(what + " is not a list: " + value);
        }
        return list;
    }
}
