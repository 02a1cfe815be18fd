"""The chip drawing: tiles as the NoC lays them out, DRAM endpoints, multicast rectangles, NoC links.

Built once; :meth:`GridView.update` swaps the sources' columns (and the ranges when the chip changes),
so zoom and pan survive a re-solve. NoC y grows downwards, as on the chip (row 0 on top).
"""

from __future__ import annotations

from bokeh.models import (
    ColumnDataSource,
    HoverTool,
    LinearColorMapper,
    Range1d,
)
from bokeh.models.annotations import ColorBar  # (bokeh.models re-exports it in a way mypy cannot follow)
from bokeh.palettes import Category10_10, Inferno256
from bokeh.plotting import figure

from loom_explorer.ui.scene import GridScene

LINK_PALETTE = Inferno256[40:241]  # the range scene.load_colour maps utilisation 0..1 onto


class GridView:
    def __init__(self, height: int = 640) -> None:
        self.tiles = ColumnDataSource(
            name="grid_tiles", data={k: [] for k in ("x", "y", "kind", "label", "work", "colour", "received", "sent")}
        )
        self.dram = ColumnDataSource(name="grid_dram", data={k: [] for k in ("x", "y", "bank", "read", "written")})
        self.rects = ColumnDataSource(
            name="grid_rects", data={k: [] for k in ("x", "y", "width", "height", "tensor", "bytes", "colour")}
        )
        self.links = ColumnDataSource(
            name="grid_links",
            data={k: [] for k in ("x0", "y0", "x1", "y1", "noc", "bytes", "utilisation", "colour", "label")},
        )
        f = figure(
            height=height,
            sizing_mode="stretch_width",
            match_aspect=True,
            x_range=Range1d(start=-0.6, end=1.6),
            y_range=Range1d(start=1.6, end=-0.6),
            tools="pan,wheel_zoom,box_zoom,reset,save",
            active_scroll="wheel_zoom",
            title="core grid and NoC traffic (NoC0 and NoC1 as two lanes, colour = link load)",
        )
        f.xaxis.axis_label, f.yaxis.axis_label = "NoC x", "NoC y"
        f.grid.visible = False
        tiles = f.rect("x", "y", 0.86, 0.86, source=self.tiles, fill_color="colour", line_color="#b0b7c0", name="tiles")
        f.rect(
            "x",
            "y",
            "width",
            "height",
            source=self.rects,
            fill_alpha=0.06,
            fill_color="colour",
            line_color="colour",
            line_dash="dashed",
            line_width=2,
            name="multicast",
        )
        dram = f.scatter("x", "y", source=self.dram, marker="square_pin", size=13, color="#7a5c00", name="dram")
        links = f.segment("x0", "y0", "x1", "y1", source=self.links, line_color="colour", line_width=3, name="links")
        f.add_tools(
            HoverTool(
                renderers=[tiles],
                tooltips=[
                    ("", "@label"),
                    ("kind", "@kind"),
                    ("work", "@work{0.000}"),
                    ("bytes in", "@received{0,0}"),
                    ("bytes out", "@sent{0,0}"),
                ],
            )
        )
        f.add_tools(
            HoverTool(
                renderers=[links],
                line_policy="interp",
                tooltips=[("link", "@label"), ("bytes", "@bytes{0,0}"), ("load", "@utilisation{0.0%}")],
            )
        )
        f.add_tools(
            HoverTool(
                renderers=[dram],
                tooltips=[("DRAM bank", "@bank"), ("bytes read", "@read{0,0}"), ("bytes written", "@written{0,0}")],
            )
        )
        mapper = LinearColorMapper(palette=LINK_PALETTE, low=0.0, high=1.0)
        f.add_layout(ColorBar(color_mapper=mapper, title="link load (share of the predicted run)", width=10), "right")
        self.figure = f
        self._chip: tuple[int, int] | None = None

    def update(self, scene: GridScene) -> None:
        if self._chip != (scene.width, scene.height):  # a new chip: fit it; otherwise keep the user's zoom
            self._chip = (scene.width, scene.height)
            self.figure.x_range.update(start=-0.6, end=scene.width - 0.4)
            self.figure.y_range.update(start=scene.height - 0.4, end=-0.6)
        tensors = list(dict.fromkeys(scene.rects.data["tensor"]))
        rects = scene.rects.source_data()
        rects["colour"] = [Category10_10[tensors.index(t) % 10] for t in rects["tensor"]]
        self.tiles.data = scene.tiles.source_data()
        self.dram.data = scene.dram.source_data()
        self.rects.data = rects
        self.links.data = scene.links.source_data()
