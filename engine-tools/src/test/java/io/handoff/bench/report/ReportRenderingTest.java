package io.handoff.bench.report;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.imageio.ImageIO;

import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Renders a report in headless Chromium and looks at the screenshot: every series and reference line of the chart
 * is drawn, across the plot, in its own colour, and a colour the chart does not use is nowhere. Skipped where no
 * Chromium is installed, unless {@code io.handoff.test.require-chromium} is true (CI installs Debian's chromium).
 */
class ReportRenderingTest
{
    private static final int PLOT_WIDTH = SvgChart.WIDTH - 70 - 190;

    @TempDir
    Path folder;

    @Test
    void chromiumDrawsEveryLineOfTheChart()
            throws Exception
    {
        Path chromium = chromium();
        Chart chart = Chart.line("bandwidth vs page size", "page bytes", "GB/s").logX()
                .series("backend", new double[] {4096, 16384, 65536, 262144, 1048576}, new double[] {0.5, 1.5, 3, 4, 4.5})
                .series("memcpy", new double[] {4096, 16384, 65536, 262144, 1048576}, new double[] {2, 4, 5.5, 6, 6.2})
                .reference("ucx_perftest", 2.5);
        Path html = new Report("rendering check").chart(chart).write(folder.resolve("report"));

        BufferedImage shot = screenshot(chromium, html);

        for (int item = 0; item < 3; item++) {
            int[] span = horizontalSpan(shot, SvgChart.colour(item));
            assertThat(span[1] - span[0]).as("width drawn in the colour of item %d (%s)", item, SvgChart.colour(item))
                    .isGreaterThan(PLOT_WIDTH * 3 / 4);
        }
        assertThat(horizontalSpan(shot, SvgChart.colour(3))).as("a colour no line uses").isEqualTo(new int[] {0, 0});
    }

    private BufferedImage screenshot(Path chromium, Path html)
            throws IOException, InterruptedException
    {
        Path png = folder.resolve("shot.png");
        List<String> command = new ArrayList<>(List.of(chromium.toString(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                "--user-data-dir=" + folder.resolve("profile"), "--window-size=1200,900", "--screenshot=" + png, html.toUri().toString()));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(folder.resolve("chromium.log").toFile()).start();
        if (!process.waitFor(120, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("chromium did not finish within 120 s: " + Files.readString(folder.resolve("chromium.log")));
        }
        assertThat(Files.exists(png)).as("chromium wrote a screenshot (exit %d): %s", process.exitValue(),
                Files.readString(folder.resolve("chromium.log"))).isTrue();
        return ImageIO.read(png.toFile());
    }

    /** The leftmost and rightmost column holding a pixel close to {@code colour}; {0, 0} when none does. */
    private static int[] horizontalSpan(BufferedImage image, String colour)
    {
        int rgb = Integer.parseInt(colour.substring(1), 16);
        int first = -1;
        int last = -1;
        for (int x = 0; x < image.getWidth(); x++) {
            for (int y = 0; y < image.getHeight(); y++) {
                if (close(image.getRGB(x, y), rgb)) {
                    if (first < 0) {
                        first = x;
                    }
                    last = x;
                    break;
                }
            }
        }
        return first < 0 ? new int[] {0, 0} : new int[] {first, last};
    }

    private static boolean close(int a, int b)
    {
        for (int shift = 0; shift <= 16; shift += 8) {
            if (Math.abs(((a >> shift) & 0xff) - ((b >> shift) & 0xff)) > 24) {
                return false;
            }
        }
        return true;
    }

    private static Path chromium()
    {
        boolean required = Boolean.getBoolean("io.handoff.test.require-chromium");
        for (String candidate : List.of(System.getenv().getOrDefault("HANDOFF_CHROMIUM", ""), "/usr/bin/chromium", "/usr/bin/chromium-browser",
                "/usr/bin/google-chrome")) {
            if (!candidate.isEmpty() && Files.isExecutable(Path.of(candidate))) {
                return Path.of(candidate);
            }
        }
        if (required) {
            throw new AssertionError("io.handoff.test.require-chromium is set and no Chromium was found (install Debian's chromium, "
                    + "or set HANDOFF_CHROMIUM)");
        }
        Assumptions.abort("no Chromium installed (Debian package chromium); set HANDOFF_CHROMIUM to use another");
        return null;
    }
}
