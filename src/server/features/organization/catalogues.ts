/**
 * The fixed option lists of organization and profile metadata
 * (`GET /v2/organization/metadata-options`, `GET /v2/profile/metadata-options`), and the
 * checks that a value comes from them. The real service's catalogues are not public: these
 * are the reference server's own.
 *
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 * @category models
 */
export interface Option {
  readonly value: string
  readonly label: string
}

const options = (...labels: ReadonlyArray<readonly [value: string, label: string]>): ReadonlyArray<Option> =>
  labels.map(([value, label]) => ({ value, label }))

/**
 * Business classification of an organization.
 *
 * @since 0.1.0
 * @category defaults
 */
export const organizationOptions = {
  industries: options(
    ["agency", "Agency"],
    ["ecommerce", "E-commerce"],
    ["education", "Education"],
    ["finance", "Finance"],
    ["healthcare", "Healthcare"],
    ["manufacturing", "Manufacturing"],
    ["media", "Media"],
    ["nonprofit", "Non-profit"],
    ["saas", "Software / SaaS"],
    ["other", "Other"]
  ),
  businessTypes: options(["b2b", "B2B"], ["b2c", "B2C"], ["b2b2c", "B2B2C"], ["marketplace", "Marketplace"]),
  companySizes: options(
    ["1-10", "1-10 employees"],
    ["11-50", "11-50 employees"],
    ["51-200", "51-200 employees"],
    ["201-1000", "201-1000 employees"],
    ["1001+", "More than 1000 employees"]
  ),
  annualRevenues: options(
    ["<1m", "Under $1M"],
    ["1m-10m", "$1M-$10M"],
    ["10m-100m", "$10M-$100M"],
    [">100m", "Over $100M"]
  )
} as const

/**
 * @since 0.1.0
 * @category models
 */
export interface Department extends Option {
  readonly roles: ReadonlyArray<Option>
}

/**
 * Departments and the job roles of each (a profile's `metadata.department` and `metadata.role`).
 *
 * @since 0.1.0
 * @category defaults
 */
export const departments: ReadonlyArray<Department> = [
  {
    value: "marketing",
    label: "Marketing",
    roles: options(["cmo", "CMO"], ["marketingManager", "Marketing manager"], ["marketingSpecialist", "Marketing specialist"])
  },
  {
    value: "sales",
    label: "Sales",
    roles: options(["salesDirector", "Sales director"], ["accountExecutive", "Account executive"], ["salesOps", "Sales operations"])
  },
  {
    value: "engineering",
    label: "Engineering",
    roles: options(["cto", "CTO"], ["engineeringManager", "Engineering manager"], ["engineer", "Engineer"])
  },
  {
    value: "finance",
    label: "Finance",
    roles: options(["cfo", "CFO"], ["financeManager", "Finance manager"], ["analyst", "Financial analyst"])
  },
  {
    value: "operations",
    label: "Operations",
    roles: options(["coo", "COO"], ["operationsManager", "Operations manager"], ["dataAnalyst", "Data analyst"])
  }
]

/**
 * Whether `value` is one of `list`'s values.
 *
 * @since 0.1.0
 * @category guards
 */
export const isOption = (list: ReadonlyArray<Option>, value: string): boolean => list.some((o) => o.value === value)
