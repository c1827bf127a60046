"""Checks a `tessel-run --report` page: what it says, and what a browser shows.

    check_report.py REPORT.html --model MODEL.onnx [--quantized] [--npu]
                    [--browser PATH --screenshot OUT.png]

The page's tables and SVG are read first: every kernel row names nodes of
MODEL.onnx and every convolution and matrix product of the model appears in
one; the bar chart draws the kernels that took longest, the roofline one
point per kernel that does arithmetic under the measured ceilings, and the
memory plan one rectangle per intermediate, no two of which share bytes
while both are alive (the planner's promise, checked here independently of
it). With --npu, the NPU section's table names nodes of the model in every
row and its chart draws one compute and one stall bar per row. With
--browser, headless Chromium renders the page and the screenshot
is searched for each section by the colours the page gives it: the table's
header and its striped rows holding text, one bar per kernel of the chart,
the roofline's ceilings and points, the memory plan's rectangles, the
quantization table, the NPU table and its bars, in that order from the top. Prints one line per finding; exits 1 on the first
failure.
"""

import argparse
import html.parser
import subprocess
import sys

import numpy as np
import onnx

HEADER = (0x2B, 0x4C, 0x7E)
STRIPE = (0xEE, 0xF2, 0xF8)
BAR = (0xE0, 0x7B, 0x39)
FLOAT_POINT = (0x2A, 0x9D, 0x8F)
INTEGER_POINT = (0x8E, 0x44, 0xAD)
ROOFS = [(0xC0, 0x39, 0x2B), (0x6C, 0x34, 0x83)]
QUANTIZATION_HEADER = (0x1D, 0x6B, 0x57)
NPU_HEADER = (0x7A, 0x4B, 0x16)
NPU_COMPUTE = (0x2E, 0x86, 0xAB)
ARENA = [(0x4E, 0x79, 0xA7), (0xF2, 0x8E, 0x2B), (0x59, 0xA1, 0x4F), (0xED, 0xC9, 0x48),
         (0xB0, 0x7A, 0xA1), (0x76, 0xB7, 0xB2), (0xFF, 0x9D, 0xA7), (0x9C, 0x75, 0x5F)]


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


class Element:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent = tag, dict(attrs), parent
        self.children, self.text = [], ""

    def find_all(self, tag, **attrs):
        for child in self.children:
            if child.tag == tag and all(child.attrs.get(k) == v for k, v in attrs.items()):
                yield child
            yield from child.find_all(tag, **attrs)

    def find(self, tag, **attrs):
        return next(self.find_all(tag, **attrs), None)

    def classes(self):
        return self.attrs.get("class", "").split()

    def all_text(self):
        return self.text + "".join(child.all_text() for child in self.children)


class TreeBuilder(html.parser.HTMLParser):
    VOID = {"meta", "br", "hr", "img", "link", "input"}

    def __init__(self):
        super().__init__()
        self.root = self.current = Element("document", [], None)

    def handle_starttag(self, tag, attrs):
        element = Element(tag, attrs, self.current)
        self.current.children.append(element)
        if tag not in self.VOID:
            self.current = element

    def handle_startendtag(self, tag, attrs):
        self.current.children.append(Element(tag, attrs, self.current))

    def handle_endtag(self, tag):
        element = self.current
        while element is not None and element.tag != tag:
            element = element.parent
        if element is not None and element.parent is not None:
            self.current = element.parent

    def handle_data(self, data):
        self.current.text += data


def table_rows(table):
    headers = [th.all_text().strip() for th in table.find("thead").find_all("th")]
    rows = []
    for tr in table.find("tbody").find_all("tr"):
        cells = [td.all_text().strip() for td in tr.find_all("td")]
        rows.append(dict(zip(headers, cells)))
    return rows


def required_rows(document, css_class, what):
    """The rows of the page's table of `css_class`, which must exist and have
    rows; `what` names it in the failure."""
    table = document.find("table", **{"class": css_class})
    if table is None:
        fail(f"no {what} table")
    rows = table_rows(table)
    if not rows:
        fail(f"the {what} table is empty")
    return rows


def check_npu(document, node_names):
    """The NPU section's table and chart; returns its row count."""
    rows = required_rows(document, "npu", "NPU")
    for row in rows:
        for name in row["ONNX nodes"].split(", "):
            if name not in node_names:
                fail(f"NPU layer {row['Kernel']} names '{name}', which is no node of the model")
    chart = document.find("svg", id="npu-cycles")
    for kind in ("compute", "stall"):
        bars = list(chart.find_all("rect", **{"class": kind}))
        if len(bars) != len(rows):
            fail(f"the NPU chart has {len(bars)} {kind} bars for {len(rows)} layers")
    print(f"npu: {len(rows)} layers named by the model's nodes, a compute and a stall bar each")
    return len(rows)


def check_page(document, model, quantized, npu):
    """The page's content; returns what the screenshot should show."""
    node_names = {node.name for node in model.graph.node}
    initializers = {tensor.name for tensor in model.graph.initializer}
    rows = required_rows(document, "kernels", "kernel")
    shown = set()
    for row in rows:
        for name in filter(None, row["ONNX nodes"].split(", ")):
            if name not in node_names:
                fail(f"kernel {row['Kernel']} names '{name}', which is no node of the model")
            shown.add(name)
    products = [node.name for node in model.graph.node
                if node.op_type in ("Conv", "MatMul", "Gemm")
                and not all(name in initializers for name in node.input if name)]
    missing = [name for name in products if name not in shown]
    if missing:
        fail(f"no kernel names the products {missing[:5]}")
    shares = [float(row["Share"].rstrip("%")) for row in rows]
    # Each share is printed rounded to 0.1 points, so printed shares may sum
    # past 100 by up to 0.05 each when the kernels take the whole run
    # (ResNet-50: 57 kernels, no copies).
    rounding = 0.05 * len(shares)
    if not 0 < sum(shares) <= 100 + rounding or shares != sorted(shares, reverse=True):
        fail(f"kernel shares {shares[:5]}... do not add up or are not longest first")
    print(f"kernel table: {len(rows)} kernels naming {len(shown)} ONNX nodes, "
          f"all {len(products)} convolutions and matrix products among them")

    bars = list(document.find("svg", id="time-chart").find_all("rect", **{"class": "bar"}))
    if len(bars) != min(20, len(rows)):
        fail(f"the bar chart has {len(bars)} bars for {len(rows)} kernels")
    roofline = document.find("svg", id="roofline-plot")
    points = list(roofline.find_all("circle", **{"class": "kernel"}))
    arithmetic = [row for row in rows if row["Rate"] != "\u2014"]
    roofs = list(roofline.find_all("polyline", **{"class": "roof"}))
    if len(points) != len(arithmetic) or not points:
        fail(f"the roofline has {len(points)} points for {len(arithmetic)} kernels doing arithmetic")
    if len(roofs) != 2:
        fail(f"the roofline has {len(roofs)} ceilings, not 2 (FP32 and INT8)")
    print(f"charts: {len(bars)} bars; roofline with {len(roofs)} ceilings and {len(points)} points")

    buffers = [tuple(int(rect.attrs[f"data-{key}"]) for key in ("offset", "size", "first", "last"))
               for rect in document.find("svg", id="memory-plan").find_all("rect", **{"class": "buffer"})]
    if not buffers:
        fail("the memory plan shows no buffer")
    for i, (offset, size, first, last) in enumerate(buffers):
        for other_offset, other_size, other_first, other_last in buffers[i + 1:]:
            alive_together = first <= other_last and other_first <= last
            share_bytes = offset < other_offset + other_size and other_offset < offset + size
            if alive_together and share_bytes:
                fail(f"buffers at {offset} and {other_offset} share bytes while both are alive")
    print(f"memory plan: {len(buffers)} intermediates, none sharing bytes while alive together")

    quantization_rows = []
    quantization = document.find("table", **{"class": "quantization"})
    if quantized:
        if quantization is None:
            fail("no quantization table")
        quantization_rows = table_rows(quantization)
        precisions = [row["Precision"] for row in quantization_rows]
        if "int8" not in precisions or not set(precisions) <= {"int8", "f32", "bf16"}:
            fail(f"quantization precisions {precisions}")
        for row in quantization_rows:
            if row["ONNX node"] not in node_names:
                fail(f"quantization names '{row['ONNX node']}', which is no node of the model")
        print(f"quantization table: {len(quantization_rows)} layers, "
              f"{precisions.count('int8')} of them int8")
    elif quantization is not None:
        fail("a quantization table for a model the compiler did not quantize")
    npu_rows = check_npu(document, node_names) if npu else 0
    if not npu and document.find("table", **{"class": "npu"}) is not None:
        fail("an NPU table for a model that runs nothing on the NPU")
    return len(rows), len(bars), len(quantization_rows), npu_rows


def screenshot(browser, page, output, height):
    command = [browser, "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--force-device-scale-factor=1", f"--window-size=1280,{height}",
               f"--screenshot={output}", "file://" + page]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        fail(f"{browser} exited with {result.returncode}: {result.stderr[-2000:]}")
    from PIL import Image
    return np.asarray(Image.open(output).convert("RGB")).astype(np.int16)


def mask(image, colour):
    return np.all(np.abs(image - np.array(colour, dtype=np.int16)) <= 2, axis=2)


def bands(rows_with_colour):
    """Runs of consecutive true rows, as (first, last) pairs."""
    found, start = [], None
    for y, present in enumerate(list(rows_with_colour) + [False]):
        if present and start is None:
            start = y
        elif not present and start is not None:
            found.append((start, y - 1))
            start = None
    return found


def stripes_of(image):
    """The striped (even) rows of the page's tables."""
    return bands(mask(image, STRIPE).sum(axis=1) > 200)


def check_screenshot(image, kernel_rows, bar_count, quantization_rows, npu_rows):
    header_rows = bands(mask(image, HEADER).sum(axis=1) > 200)
    if not header_rows:
        fail("the screenshot shows no kernel table header")
    table_top = header_rows[0][0]
    stripes = [band for band in stripes_of(image) if band[0] > table_top]
    # Every second row is striped; the last stripe ends the table.
    if len(stripes) < kernel_rows // 2:
        fail(f"the screenshot shows {len(stripes)} striped rows for {kernel_rows} kernels")
    table_bottom = stripes[kernel_rows // 2 - 1][1] if kernel_rows > 1 else table_top + 40
    dark = np.all(image[table_top:table_bottom] < 110, axis=2).sum()
    if dark < 60 * kernel_rows:
        fail(f"the kernel table holds {dark} dark pixels: its text did not render")
    print(f"screenshot: kernel table at y={table_top}..{table_bottom}, {len(stripes)} striped rows, "
          f"{dark} pixels of text")

    bar_bands = bands(mask(image, BAR).sum(axis=1) > 0)
    if len(bar_bands) != bar_count or bar_bands[0][0] < table_bottom:
        fail(f"the screenshot shows {len(bar_bands)} bars below the table, not {bar_count}")
    roof_pixels = sum(mask(image, colour) for colour in ROOFS)
    point_pixels = mask(image, FLOAT_POINT) | mask(image, INTEGER_POINT)
    roof_rows = np.nonzero(roof_pixels.sum(axis=1))[0]
    if roof_pixels.sum() < 300 or point_pixels.sum() < 30 or roof_rows[0] < bar_bands[-1][1]:
        fail(f"the roofline's ceilings ({roof_pixels.sum()} pixels) and points "
             f"({point_pixels.sum()} pixels) are missing or above the bar chart")
    arena_pixels = sum(mask(image, colour) for colour in ARENA)
    arena_rows = np.nonzero(arena_pixels.sum(axis=1) > 20)[0]
    if arena_pixels.sum() < 2000 or arena_rows[0] < roof_rows[-1]:
        fail(f"the memory plan ({arena_pixels.sum()} pixels) is missing or above the roofline")
    print(f"screenshot: {len(bar_bands)} bars at y={bar_bands[0][0]}..{bar_bands[-1][1]}; "
          f"roofline at y={roof_rows[0]}..{roof_rows[-1]} ({roof_pixels.sum()} pixels of ceilings, "
          f"{point_pixels.sum()} of points); memory plan at y={arena_rows[0]}..{arena_rows[-1]} "
          f"({arena_pixels.sum()} pixels of buffers)")
    if quantization_rows:
        quantization_header = bands(mask(image, QUANTIZATION_HEADER).sum(axis=1) > 200)
        if not quantization_header or quantization_header[0][0] < arena_rows[-1]:
            fail("the screenshot shows no quantization table below the memory plan")
        top = quantization_header[0][0]
        layer_stripes = [band for band in stripes_of(image) if band[0] > top]
        if len(layer_stripes) < quantization_rows // 2:
            fail(f"the screenshot shows {len(layer_stripes)} striped rows for "
                 f"{quantization_rows} quantized layers")
        print(f"screenshot: quantization table at y={top}, {len(layer_stripes)} striped rows")
    if npu_rows:
        npu_header = bands(mask(image, NPU_HEADER).sum(axis=1) > 200)
        if not npu_header or npu_header[0][0] < arena_rows[-1]:
            fail("the screenshot shows no NPU table below the memory plan")
        top = npu_header[0][0]
        compute_bars = [band for band in bands(mask(image, NPU_COMPUTE).sum(axis=1) > 0)
                        if band[0] > top]
        # The legend's square, then one bar per layer.
        if len(compute_bars) < npu_rows + 1:
            fail(f"the screenshot shows {len(compute_bars)} NPU compute bars for {npu_rows} "
                 f"layers")
        print(f"screenshot: NPU table at y={top}, {len(compute_bars) - 1} compute bars below it")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("report")
    parser.add_argument("--model", required=True)
    parser.add_argument("--quantized", action="store_true")
    parser.add_argument("--npu", action="store_true")
    parser.add_argument("--browser")
    parser.add_argument("--screenshot")
    args = parser.parse_args()
    builder = TreeBuilder()
    with open(args.report, encoding="utf-8") as page:
        builder.feed(page.read())
    kernel_rows, bar_count, quantization_rows, npu_rows = check_page(
        builder.root, onnx.load(args.model, load_external_data=False), args.quantized, args.npu)
    if args.browser:
        import os
        # Every section fits, with room to spare: the rest is white.
        height = 2800 + 30 * (kernel_rows + quantization_rows) + 50 * npu_rows
        image = screenshot(args.browser, os.path.abspath(args.report), args.screenshot, height)
        check_screenshot(image, kernel_rows, bar_count, quantization_rows, npu_rows)
    print("PASS")


if __name__ == "__main__":
    main()
