"""P4Runtime controller: topology model, address plan, table entries, install and `mrcctl`."""
