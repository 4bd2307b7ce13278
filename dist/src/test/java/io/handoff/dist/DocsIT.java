package io.handoff.dist;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.Normalizer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The user guide as users get it: the README front page and docs/, in the checkout and in the distribution. Every
 * relative link and anchor resolves, the configuration reference is what {@code handoff config --reference} prints
 * (regenerate it with {@code make docs}), and no page points at what users do not have.
 */
class DocsIT
{
    private static final Path CHECKOUT = Path.of("..");
    private static final Pattern LINK = Pattern.compile("\\[[^\\]]*\\]\\(([^)\\s]+)(?:\\s+\"[^\"]*\")?\\)");
    private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.*?)\\s*#*\\s*$");
    private static final Pattern FENCE = Pattern.compile("```.*?```", Pattern.DOTALL);

    @TempDir
    Path temp;

    @Test
    void theConfigurationReferenceIsWhatTheEnginePrints()
            throws Exception
    {
        Launcher.Run run = Launcher.run(temp, "config", "--reference");

        assertThat(run.exitCode()).as("every key needs a description in its reference.conf: " + run.stderr()).isZero();
        assertThat(Files.readString(CHECKOUT.resolve("docs/configuration.md")))
                .as("docs/configuration.md is stale: regenerate it with make docs")
                .isEqualTo(run.stdout());
    }

    @Test
    void everyLinkResolvesInTheCheckoutAndInTheDistribution()
            throws IOException
    {
        for (Path root : List.of(CHECKOUT, Launcher.DIST)) {
            List<Path> pages = pages(root);
            assertThat(pages).as("README and docs pages under " + root).hasSizeGreaterThanOrEqualTo(9);
            List<String> broken = new ArrayList<>();
            for (Path page : pages) {
                broken.addAll(brokenLinks(page));
            }
            assertThat(broken).as("broken links under " + root).isEmpty();
        }
    }

    @Test
    void theFrontPageIsShortAndNoPagePointsAtWhatUsersDoNotHave()
            throws IOException
    {
        assertThat(Files.size(CHECKOUT.resolve("README.md"))).as("README.md bytes").isLessThanOrEqualTo(16_000);
        Pattern elsewhere = Pattern.compile("\\.\\./shared|\\((goal, )?issue [0-9]+\\)|project notes");
        for (Path page : pages(CHECKOUT)) {
            Files.readString(page).lines().forEach(line ->
                    assertThat(elsewhere.matcher(line).find()).as(page + ": " + line).isFalse());
        }
    }

    private static List<Path> pages(Path root)
            throws IOException
    {
        List<Path> pages = new ArrayList<>(List.of(root.resolve("README.md")));
        try (Stream<Path> docs = Files.list(root.resolve("docs"))) {
            docs.filter(path -> path.toString().endsWith(".md")).sorted().forEach(pages::add);
        }
        return pages;
    }

    private static List<String> brokenLinks(Path page)
            throws IOException
    {
        List<String> broken = new ArrayList<>();
        String text = FENCE.matcher(Files.readString(page)).replaceAll("");
        Matcher link = LINK.matcher(text);
        while (link.find()) {
            String target = link.group(1);
            if (target.matches("^[a-z]+:.*")) {
                continue;
            }
            int hash = target.indexOf('#');
            String file = hash < 0 ? target : target.substring(0, hash);
            Path destination = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
            if (!Files.exists(destination)) {
                broken.add(page + ": " + target + ": no such file");
            }
            else if (hash >= 0 && destination.toString().endsWith(".md") && !anchors(destination).contains(target.substring(hash + 1))) {
                broken.add(page + ": " + target + ": no such heading");
            }
        }
        return broken;
    }

    /** GitHub's heading anchors: lower case, letters, digits, spaces as '-', '-' and '_' kept; repeats numbered. */
    private static Set<String> anchors(Path page)
            throws IOException
    {
        Set<String> anchors = new HashSet<>();
        Map<String, Integer> seen = new HashMap<>();
        boolean fence = false;
        for (String line : Files.readAllLines(page)) {
            if (line.strip().startsWith("```")) {
                fence = !fence;
                continue;
            }
            Matcher heading = HEADING.matcher(line);
            if (fence || !heading.matches()) {
                continue;
            }
            String title = heading.group(1).replaceAll("\\[([^\\]]*)\\]\\([^)]*\\)", "$1");
            StringBuilder slug = new StringBuilder();
            Normalizer.normalize(title.toLowerCase(Locale.ROOT), Normalizer.Form.NFC).codePoints().forEach(c -> {
                if (c == ' ') {
                    slug.append('-');
                }
                else if (c == '-' || c == '_' || Character.isLetterOrDigit(c)) {
                    slug.appendCodePoint(c);
                }
            });
            int n = seen.merge(slug.toString(), 1, Integer::sum) - 1;
            anchors.add(n == 0 ? slug.toString() : slug + "-" + n);
        }
        Matcher named = Pattern.compile("<a\\s+(?:name|id)=\"([^\"]+)\"").matcher(Files.readString(page));
        while (named.find()) {
            anchors.add(named.group(1));
        }
        return anchors;
    }
}
