"""The quick position lookup (lxml line + nearby search) agrees with the full markup scan."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from ampsctl.config.loader import _index, load_config

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "samples").glob("*.xml")) + sorted((ROOT / "tests" / "schema" / "valid").glob("*.xml"))

TRICKY = """<?xml version="1.0"?>
<!-- a comment before the root -->
<AMPSConfig><Name>a</Name><SOW><Topic><Topic>x</Topic><Key>a</Key><Key>b</Key></Topic><!--c--><!--d--></SOW>
  <Transports>
    <Transport
        ><Name>t</Name><Type>tcp</Type>
      <InetAddr
         >9007</InetAddr></Transport>
  </Transports>
  <Description><![CDATA[ <Name>not an element</Name> ]]></Description>
</AMPSConfig>
"""


def _check(path: Path) -> int:
    config = load_config(str(path), {})
    source = config._sources[0]
    full = _index(source)
    checked = 0
    for node, mark in full.items():
        if isinstance(node.tag, str) or node.tag is etree.Comment:
            assert config._find(node, source) == mark, f"{path}: {node.tag} line {node.sourceline}"
            checked += 1
    return checked


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_quick_lookup_matches_full_scan(path: Path) -> None:
    if "<Include" in path.read_text(errors="replace") or "${" in path.read_text(errors="replace"):
        pytest.skip("includes and variables change the tree or need an environment")
    assert _check(path) > 0


def test_tricky_layout(tmp_path: Path) -> None:
    path = tmp_path / "amps.xml"
    path.write_text(TRICKY)
    assert _check(path) >= 14
