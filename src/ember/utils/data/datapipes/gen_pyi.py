"""``ember.utils.data.datapipes.gen_pyi``: torch's stub generator for DataPipe type hints (a
build-time tool with no public names; present so torch's module path imports)."""
