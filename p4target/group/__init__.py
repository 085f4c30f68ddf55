"""Many switches in one process (``p4target group GROUP.yaml``): the group file's
model and checks (``spec``) and the running group (``process``)."""
