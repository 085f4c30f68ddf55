/* rt_all.p4 with lpm_t keyed on another field: for RECONCILE_AND_COMMIT tests. */
#define RT_V2
#include "rt_all.p4"
