// What a JDBC tool (DBeaver, DataGrip) does against cachedb, through the Apache Arrow Flight SQL
// JDBC driver: browse the metadata tree, run prepared statements with parameters of five types
// (one by one and batched), and read every column type of demo.rides.
//
//   java --add-opens=java.base/java.nio=ALL-UNNAMED -cp flight-sql-jdbc-driver.jar \
//       tests/jdbc/FlightSqlJdbcCheck.java HOST:PORT
//
// Prints what it saw, one fact a line, and exits 1 at the first check that fails.
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.Date;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

public class FlightSqlJdbcCheck {
    static void check(boolean ok, String what) {
        if (!ok) {
            System.out.println("FAIL " + what);
            System.exit(1);
        }
        System.out.println("ok " + what);
    }

    static List<String> column(ResultSet rs, String name) throws Exception {
        List<String> out = new ArrayList<>();
        while (rs.next()) {
            out.add(rs.getString(name));
        }
        rs.close();
        return out;
    }

    /** Whether a name can be written without quotes. */
    static boolean plain(String name) {
        return name.matches("[A-Za-z_][A-Za-z0-9_$]*");
    }

    /** The name in backquotes, a backquote in it doubled. */
    static String quote(String name) {
        return "`" + name.replace("`", "``") + "`";
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:arrow-flight-sql://" + args[0] + "?useEncryption=false";
        String table = "jdbc_params_" + Long.toHexString(System.nanoTime());
        try (Connection conn = DriverManager.getConnection(url)) {
            DatabaseMetaData md = conn.getMetaData();
            List<String> catalogs = column(md.getCatalogs(), "TABLE_CAT");
            check(catalogs.contains("cachedb"), "getCatalogs lists cachedb: " + catalogs);
            List<String> schemas = column(md.getSchemas(), "TABLE_SCHEM");
            check(schemas.contains("demo"), "getSchemas lists demo: " + schemas);
            List<String> tables = column(md.getTables(null, null, "%", null), "TABLE_NAME");
            check(tables.contains("rides"), "getTables lists rides: " + tables);
            List<String> cols = column(md.getColumns(null, "demo", "rides", "%"), "COLUMN_NAME");
            check(cols.contains("fare") && cols.contains("pickup_at"), "getColumns of demo.rides: " + cols);

            // Names built from the metadata tree, as GUI tools build them, work in SQL.
            try (ResultSet rs = md.getTables(null, null, "%", null); Statement st = conn.createStatement()) {
                int n = 0;
                while (rs.next()) {
                    String cat = rs.getString("TABLE_CAT"), schem = rs.getString("TABLE_SCHEM"), name = rs.getString("TABLE_NAME");
                    // Unquoted where every part is a plain identifier; quoted always, as GUI tools do.
                    List<String> names = new ArrayList<>();
                    if (plain(cat) && plain(schem) && plain(name)) {
                        names.add(cat + "." + schem + "." + name);
                    }
                    names.add(quote(cat) + "." + quote(schem) + "." + quote(name));
                    for (String q : names) {
                        try (ResultSet r = st.executeQuery("SELECT * FROM " + q + " LIMIT 1")) {
                            while (r.next()) { }
                        } catch (Exception e) {
                            check(false, "SELECT * FROM " + q + ": " + e.getMessage());
                        }
                    }
                    n++;
                }
                check(n >= 3, "every table getTables lists can be queried by catalog.schema.table (" + n + " tables)");
            }
            // The metadata types each column as a query returns it.
            List<String> listedTypes = new ArrayList<>();
            try (ResultSet rs = md.getColumns("local", "demo", "rides", "%")) {
                while (rs.next()) {
                    listedTypes.add(rs.getString("TYPE_NAME"));
                }
            }
            List<String> returnedTypes = new ArrayList<>();
            try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT * FROM demo.rides LIMIT 1")) {
                for (int c = 1; c <= rs.getMetaData().getColumnCount(); c++) {
                    returnedTypes.add(rs.getMetaData().getColumnTypeName(c));
                }
            }
            check(listedTypes.equals(returnedTypes), "getColumns types " + listedTypes + " are the query's " + returnedTypes);

            try (Statement st = conn.createStatement()) {
                st.execute("CREATE TABLE " + table + " (i INT, l BIGINT, d DOUBLE, s VARCHAR(20), dt DATE)");
            }
            try (PreparedStatement ps = conn.prepareStatement("INSERT INTO " + table + " VALUES (?, ?, ?, ?, ?)")) {
                ps.setInt(1, 1);
                ps.setLong(2, 10000000000L);
                ps.setDouble(3, 1.5);
                ps.setString(4, "one");
                ps.setDate(5, Date.valueOf("2024-02-29"));
                check(ps.executeUpdate() == 1, "prepared INSERT with int, bigint, double, string, date");
                for (int k = 2; k <= 3; k++) {
                    ps.setInt(1, k);
                    ps.setLong(2, 10000000000L * k);
                    ps.setDouble(3, k + 0.5);
                    ps.setString(4, "row" + k);
                    ps.setDate(5, Date.valueOf("2024-03-0" + k));
                    ps.addBatch();
                }
                int[] counts = ps.executeBatch();
                // The driver sends the batch as one parameter set and reports its total.
                check(java.util.Arrays.stream(counts).sum() == 2, "executeBatch of two parameter rows: " + java.util.Arrays.toString(counts));
            }
            String q = "SELECT i, l, d, s, dt FROM " + table + " WHERE i >= ? AND l >= ? AND d > ? AND s LIKE ? AND dt >= ? ORDER BY i";
            try (PreparedStatement ps = conn.prepareStatement(q)) {
                ps.setInt(1, 2);
                ps.setLong(2, 20000000000L);
                ps.setDouble(3, 2.0);
                ps.setString(4, "row%");
                ps.setDate(5, Date.valueOf("2024-03-01"));
                try (ResultSet rs = ps.executeQuery()) {
                    List<String> rows = new ArrayList<>();
                    while (rs.next()) {
                        rows.add(rs.getInt(1) + "," + rs.getLong(2) + "," + rs.getDouble(3) + "," + rs.getString(4) + "," + rs.getDate(5));
                    }
                    check(rows.equals(List.of("2,20000000000,2.5,row2,2024-03-02", "3,30000000000,3.5,row3,2024-03-03")),
                        "prepared SELECT with five parameter types: " + rows);
                }
            }

            try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT * FROM demo.rides LIMIT 3")) {
                ResultSetMetaData rmd = rs.getMetaData();
                int n = 0;
                while (rs.next()) {
                    for (int c = 1; c <= rmd.getColumnCount(); c++) {
                        Object v = rs.getObject(c);
                        if (n == 0) {
                            System.out.println("column " + rmd.getColumnName(c) + " " + rmd.getColumnTypeName(c) + " " + (v == null ? "null" : v.getClass().getSimpleName()));
                        }
                    }
                    n++;
                }
                check(n == 3 && rmd.getColumnCount() >= 14, "read every column of demo.rides (" + rmd.getColumnCount() + " columns)");
            }
            try (Statement st = conn.createStatement()) {
                st.execute("DROP TABLE " + table);
                // USE travels in the session cookie, which the driver returns.
                st.execute("USE `local.demo`");
                try (ResultSet rs = st.executeQuery("SHOW TABLES")) {
                    check(rs.getMetaData().getColumnName(1).equals("Tables_in_local.demo") && column(rs, "Tables_in_local.demo").contains("rides"),
                        "USE `local.demo` then SHOW TABLES");
                }
            }
        }
        System.out.println("PASS");
    }
}
