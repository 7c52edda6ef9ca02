"""A synthetic catalogue of product offers in three shops' styles, with known duplicates.

For tests, examples and demos: products (brand, model number, screen size, resolution, refresh
rate, weight, width) are listed by up to three shops, each writing titles and attributes its own
way, as real shops do:

- ``alpha``: ``"Lumo 46" 1080p 120Hz LED HDTV LM46X210"`` with decimal attributes;
- ``beta``: ``"Lumo - 46" Class / LED / 1080p / 120Hz / HDTV"`` (no model number in the title)
  with fractions (``45-7/8"``) and a UPC;
- ``gamma``: ``"Lumo LM-46X210 46-Inch 1080p LED TV"`` with a ``Model`` attribute.

Sibling models share brand, size and most specifications, so the model number or the
attribute values must tell them apart.
"""

from __future__ import annotations

import numpy as np

from .offers import Offers

BRANDS = ("Lumo", "Vistar", "Kanto", "Orbis", "Pexel", "Quasar")
SHOPS = ("alpha", "beta", "gamma")


def _fraction(x: float) -> str:
    whole = int(x)
    eighths = round((x - whole) * 8)
    if eighths == 0:
        return f"{whole}"
    if eighths == 8:
        return f"{whole + 1}"
    g = np.gcd(eighths, 8)
    return f"{whole}-{eighths // g}/{8 // g}"


def make_catalogue(
    n_products: int = 60, seed: int = 0, p_listed: float = 0.6
) -> tuple[Offers, list[str]]:
    """Offers of ``n_products`` products, each listed by every shop with probability
    ``p_listed`` (at least once), and the product of each offer (the truth, kept apart)."""
    rng = np.random.default_rng(seed)
    offers = Offers()
    labels: list[str] = []
    for p in range(n_products):
        brand = BRANDS[p % len(BRANDS)]
        size = int(rng.choice([24, 32, 40, 46, 55, 60]))
        series = f"{'XYZ'[p % 3]}{100 + (p // 3) * 10 + int(rng.integers(0, 10))}"
        model = f"{brand[:2].upper()}{size}{series}"
        res = str(rng.choice(["720p", "1080p"]))
        hz = int(rng.choice([60, 120, 240]))
        kind = str(rng.choice(["LED", "LCD", "Plasma"]))
        weight = round(float(rng.uniform(8, 60)), 1)
        width = round(size * 0.87 + float(rng.uniform(-1, 1)), 2)
        shops = [s for s in SHOPS if rng.random() < p_listed] or [SHOPS[int(rng.integers(3))]]
        for shop in shops:
            if shop == "alpha":
                title = f'{brand} {size}" {res} {hz}Hz {kind} HDTV {model}'
                attrs = {
                    "Brand": brand,
                    "Weight": f"{weight} lbs.",
                    "Dimensions": f'{width:.1f}" x {size * 0.6:.1f}"',
                    "Refresh Rate": f"{hz}Hz",
                }
            elif shop == "beta":
                title = f'{brand} - {size}" Class / {kind} / {res} / {hz}Hz / HDTV'
                attrs = {
                    "Product Weight": f"{weight} lbs.",
                    "Product Width": f'{_fraction(width)}"',
                    "UPC": f"{int(rng.integers(10**11, 10**12))}",
                    "Screen Refresh Rate": f"{hz}Hz",
                }
            else:
                title = f"{brand} {model[:2]}-{model[2:]} {size}-Inch {res} {kind} TV"
                attrs = {"Brand Name": brand, "Model": model, "Shipping Weight": f"{weight} pounds"}
            offers.ids.append(f"{shop}-{len(offers.ids)}")
            offers.shops.append(shop)
            offers.titles.append(title)
            offers.attributes.append(attrs)
            offers.descriptions.append("")
            offers.sources.append(f"synthetic:{len(offers.sources)}")
            labels.append(model)
    return offers, labels
