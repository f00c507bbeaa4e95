"""Topology files from what a cluster already has: Slurm's topology files (``slurm.py``), LLDP
neighbour tables (``lldp.py``), and the YAML writer they share (``tree.py``).

Each importer is a pure function from text to an :class:`~aapcgen.importers.tree.ImportedTree`;
``tree.to_data`` turns that into the project's YAML document, validated by the same loader as a
hand-written file (``aapcgen.core.topology.parse_topology``). Problems are one-line
:class:`~aapcgen.core.errors.InputError` messages naming the file and the line.
"""
