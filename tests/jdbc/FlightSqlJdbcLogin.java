// The Apache Arrow Flight SQL JDBC driver against a cachedb that serves TLS and requires logins:
// encryption on, the server's CA given as a PEM file, a user and password exchanged for a bearer
// token that the driver presents to the head and to the data nodes its endpoints name.
//
//   java --add-opens=java.base/java.nio=ALL-UNNAMED -cp flight-sql-jdbc-driver.jar \
//       tests/jdbc/FlightSqlJdbcLogin.java HOST:PORT CA_PEM READER_USER READER_PASSWORD
//
// Prints what it saw, one fact a line, "PASS" at the end; exits 1 at the first check that fails.
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

public class FlightSqlJdbcLogin {
    static void check(boolean ok, String what) {
        if (!ok) {
            System.out.println("FAIL " + what);
            System.exit(1);
        }
        System.out.println("ok " + what);
    }

    static String url(String hostPort, String ca, String userPassword) {
        return "jdbc:arrow-flight-sql://" + hostPort + "?useEncryption=true&tlsRootCerts=" + ca + userPassword;
    }

    // refused runs sql on a new connection and returns the message of the failure ("" when it ran).
    static String refused(String url, String sql) {
        try (Connection conn = DriverManager.getConnection(url); Statement st = conn.createStatement()) {
            st.execute(sql);
            return "";
        } catch (SQLException e) {
            StringBuilder msg = new StringBuilder();
            for (Throwable t = e; t != null; t = t.getCause()) {
                msg.append(t.getMessage()).append(" | ");
            }
            return msg.toString();
        }
    }

    public static void main(String[] args) throws Exception {
        String hostPort = args[0], ca = args[1], user = args[2], password = args[3];
        String reader = url(hostPort, ca, "&user=" + user + "&password=" + password);
        try (Connection conn = DriverManager.getConnection(reader); Statement st = conn.createStatement()) {
            int rows = 0;
            long total = 0;
            try (ResultSet rs = st.executeQuery("SELECT city, count(*) AS n FROM demo.rides GROUP BY city")) {
                while (rs.next()) {
                    rows++;
                    total += rs.getLong("n");
                }
            }
            check(rows == 8 && total == 200000, "a query over TLS after login, grouped on the data nodes: " + rows + " cities, " + total + " rides");
        }
        String denied = refused(reader, "CREATE TABLE jdbc_denied (a INT)");
        check(denied.contains("role"), "a reader's CREATE TABLE is refused: " + denied);
        String wrong = refused(url(hostPort, ca, "&user=" + user + "&password=not-" + password), "SELECT 1");
        check(!wrong.isEmpty() && !wrong.contains("not-" + password), "a wrong password is refused without echoing it: " + wrong);
        String anonymous = refused(url(hostPort, ca, ""), "SELECT 1");
        check(anonymous.toUpperCase().contains("UNAUTHENTICATED") || anonymous.contains("log in"), "no login is refused: " + anonymous);
        System.out.println("PASS");
    }
}
